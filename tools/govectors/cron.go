package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

const cronRandom = 8000

// cronZones: the zones the random cases run in. Australia/Lord_Howe (a 30-minute DST shift) is left out on purpose:
// robfig/cron's Next steps whole hours and skips some activations near that shift, which raykube does not copy.
var cronZones = []string{
	"UTC", "America/New_York", "Europe/Berlin", "Asia/Kolkata", "Australia/Sydney", "America/St_Johns",
	"Asia/Kathmandu", "America/Havana", "Pacific/Chatham",
}

const cronNow = "2026-12-03T17:30:00Z"

// Curated cases: [label, spec, after, zone].
var cronCurated = [][4]string{
	{"every minute", "* * * * *", cronNow, "UTC"},
	{"half a second before the minute", "* * * * *", "2026-12-03T17:29:59.5Z", "UTC"},
	{"step of minutes", "*/15 * * * *", "2026-12-03T17:31:00Z", "UTC"},
	{"day of month OR day of week", "0 9 1 * 1", cronNow, "UTC"},
	{"day of week only", "0 9 * * 1", cronNow, "UTC"},
	{"*/2 is no star: OR again", "0 9 */2 * 1", cronNow, "UTC"},
	{"never (30 February)", "0 0 30 2 *", cronNow, "UTC"},
	{"@weekly", "@weekly", cronNow, "UTC"},
	{"@every rounds from the moment less its fraction", "@every 1m30s", "2026-12-03T17:30:00.7Z", "UTC"},
	{"@every below a second is one second", "@every 300ms", "2026-12-03T17:30:00.7Z", "UTC"},
	{"CRON_TZ prefix", "CRON_TZ=Asia/Tokyo 0 9 * * *", cronNow, "UTC"},
	{"the prefix zone wins over the zone given", "TZ=Asia/Tokyo 0 9 * * *", cronNow, "America/New_York"},
	{"no prefix: the zone given (Tokyo)", "0 9 * * *", cronNow, "Asia/Tokyo"},
	{"no prefix: the zone given (UTC)", "0 9 * * *", cronNow, "UTC"},
	{"02:30 skipped (DST gap)", "30 2 * * *", "2026-03-08T06:00:00Z", "America/New_York"},
	{"01:23 again (DST fold)", "23 * * * *", "2026-11-01T05:30:00Z", "America/New_York"},
	{"month and day names", "0 12 * JAN-MAR sun", cronNow, "UTC"},
	{"empty", "", cronNow, "UTC"},
	{"unknown zone", "TZ=Mars/X * * * * *", cronNow, "UTC"},
	{"day of week 7", "0 0 1 1 7", cronNow, "UTC"},
	{"reversed range", "5-1 * * * *", cronNow, "UTC"},
	{"step 0", "*/0 * * * *", cronNow, "UTC"},
	{"not a number", "x * * * *", cronNow, "UTC"},
	{"unknown descriptor", "@fortnightly", cronNow, "UTC"},
	{"four fields", "* * * *", cronNow, "UTC"},
}

func init() {
	register(family{
		name:   "cron",
		checks: "raykube.api.cron.parse(spec).next(after, ZoneInfo(zone)), or the CronError text of parse",
		calls:  "cron.ParseStandard(spec), then Schedule.Next(after.In(time.LoadLocation(zone))); next is null when Next returns the zero time",
		fields: []string{"label", "spec", "after", "zone", "next", "error"},
		notes: []string{
			fmt.Sprintf("%d curated cases, then %d random schedules and moments (SplitMix64, seed 1) in the zones %s.",
				len(cronCurated), cronRandom, strings.Join(cronZones, ", ")),
			"Australia/Lord_Howe is left out on purpose: its DST shift is 30 minutes and robfig/cron's Next, which steps whole hours near a shift, skips some activations there; raykube does not copy that (see raykube.api.cron).",
			"Moments have microsecond precision (what a Python datetime holds); times are RFC 3339 in UTC.",
		},
		cases: cronCases, curated: len(cronCurated),
		mods: []string{"github.com/robfig/cron/v3"},
	})
}

func cronCase(label, spec, after, zone string) []any {
	moment, err := time.Parse(time.RFC3339Nano, after)
	if err != nil {
		panic(err)
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		panic(err)
	}
	schedule, err := cron.ParseStandard(spec)
	if err != nil {
		return []any{label, spec, after, zone, nil, err.Error()}
	}
	next := schedule.Next(moment.In(loc))
	if next.IsZero() {
		return []any{label, spec, after, zone, nil, nil}
	}
	return []any{label, spec, after, zone, formatUTC(next), nil}
}

func formatUTC(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.999999Z07:00") }

func cronCases() [][]any {
	var cases [][]any
	for _, c := range cronCurated {
		cases = append(cases, cronCase(c[0], c[1], c[2], c[3]))
	}
	r := newRNG(1)
	for range cronRandom {
		zone := pick(r, cronZones)
		spec := randomSpec(r)
		after := randomMoment(r, zone)
		cases = append(cases, cronCase("", spec, after, zone))
	}
	return cases
}

var cronMonths = []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}
var cronDays = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}
var cronDescriptors = []string{"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}

// cronField: one field of a schedule; now and then a broken one (out of range, reversed, step 0, not a number).
func cronField(r *rng, low, high int, names []string) string {
	item := func() string {
		value := func() string {
			if names != nil && r.chance(30) {
				name := pick(r, names)
				if r.chance(30) {
					name = strings.ToUpper(name)
				}
				return name
			}
			if r.chance(1) {
				return fmt.Sprint(high + 1 + r.intn(3))
			}
			return fmt.Sprint(r.between(low, high))
		}
		switch r.intn(10) {
		case 0, 1:
			return "*"
		case 2:
			step := r.between(1, high-low+1)
			if r.chance(1) {
				step = 0
			}
			return fmt.Sprintf("*/%d", step)
		case 3:
			return fmt.Sprintf("%s/%d", value(), r.between(1, 10))
		case 4, 5:
			a, b := r.between(low, high), r.between(low, high)
			if a > b && !r.chance(3) {
				a, b = b, a
			}
			text := fmt.Sprintf("%d-%d", a, b)
			if r.chance(30) {
				text += fmt.Sprintf("/%d", r.between(1, 12))
			}
			return text
		case 6:
			if r.chance(2) {
				return pick(r, []string{"x", "1-", "-1", "1/", "a-b", "1,,2", "**"})
			}
			return "?"
		default:
			return value()
		}
	}
	parts := []string{item()}
	for r.chance(20) {
		parts = append(parts, item())
	}
	return strings.Join(parts, ",")
}

func randomSpec(r *rng) string {
	var spec string
	switch {
	case r.chance(6):
		spec = pick(r, cronDescriptors)
	case r.chance(3):
		spec = "@every " + pick(r, []string{"1m30s", "300ms", "45s", "2h", "1h0m0.5s", "90m", "1s", "7m", "25h", "0s", "-1m", "1x", "3.5s"})
	default:
		fields := []string{
			cronField(r, 0, 59, nil), cronField(r, 0, 23, nil), cronField(r, 1, 31, nil),
			cronField(r, 1, 12, cronMonths), cronField(r, 0, 6, cronDays),
		}
		// Most schedules are plausible: keep the minute and hour narrow so that they fire a few times a day.
		if r.chance(60) {
			fields[0] = fmt.Sprint(r.between(0, 59))
		}
		if r.chance(40) {
			fields[1] = fmt.Sprint(r.between(0, 23))
		}
		if r.chance(1) {
			fields = fields[:4]
		}
		spec = strings.Join(fields, " ")
	}
	if r.chance(8) {
		spec = pick(r, []string{"TZ=", "CRON_TZ="}) + pick(r, cronZones) + " " + spec
	}
	return spec
}

// randomMoment: a moment between 2020 and 2032; one in three falls on a DST season's small hours in the zone.
func randomMoment(r *rng, zone string) string {
	loc, err := time.LoadLocation(zone)
	if err != nil {
		panic(err)
	}
	var t time.Time
	if r.chance(33) {
		month := time.Month(pick(r, []int{2, 3, 4, 9, 10, 11}))
		t = time.Date(r.between(2020, 2031), month, r.between(1, 28), r.between(0, 4), r.intn(60), r.intn(60), 0, loc)
	} else {
		start := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
		t = time.Unix(start+int64(r.intn(12*365*86400)), 0)
	}
	switch r.intn(4) {
	case 0:
		t = t.Truncate(time.Minute)
	case 1:
		t = t.Add(time.Duration(r.intn(1_000_000)) * time.Microsecond)
	}
	return formatUTC(t)
}
