package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

const (
	durationStringRandom = 1500
	durationParseRandom  = 2000
	atoiRandom           = 1000
)

var durationStringCurated = []int64{
	0, 999, 1500, -1500, 1_500_000, 1_000_000_000, 12_503_400_123, 60_000_000_000, 3_600_000_000_000,
	3_723_500_000_000, 1, -1, math.MaxInt64, math.MinInt64,
}

var durationParseCurated = []string{
	"30m", "1800", "1h30m", "1.5s", "90", "abc", "", "10s", "0", "+0", "-0", "-1.5h", "1h-1m", ".5s", "5.s", ".s",
	"1µs", "1μs", "1us", "1ns", "1d", "9223372036854775807ns", "9223372036854775808ns", "2562047h47m16.854775807s",
	"2562047h47m16.854775808s", "-2562047h47m16.854775808s", "0.0000000001s", "1.0000000000000000000001h", "1m 30s",
}

var atoiCurated = []string{
	"1800", "90", "-5", "+7", "0", "", "abc", "1_000", " 1", "1 ", "0x10", "9223372036854775807", "9223372036854775808",
	"-9223372036854775808", "-9223372036854775809", "٣", "1.5", "30m", "+", "-",
}

func init() {
	register(family{
		name:   "duration",
		checks: "raykube.golang.duration.duration_string (String) and parse_duration (ParseDuration), raykube.golang.strconv.atoi (Atoi): the value, or the error text; the RayService initializing timeout is read with the last two",
		calls:  "time.Duration(n).String(), time.ParseDuration(text), strconv.Atoi(text)",
		fields: []string{"func", "input", "output", "error"},
		notes: []string{fmt.Sprintf("Curated inputs (%d String, %d ParseDuration, %d Atoi), then random ones (SplitMix64, seed 6): %d String, %d ParseDuration, %d Atoi.",
			len(durationStringCurated), len(durationParseCurated), len(atoiCurated), durationStringRandom, durationParseRandom, atoiRandom)},
		cases: durationCases, curated: len(durationStringCurated) + len(durationParseCurated) + len(atoiCurated),
	})
}

func durationCases() [][]any {
	var cases [][]any
	str := func(n int64) { cases = append(cases, []any{"String", n, time.Duration(n).String(), nil}) }
	parse := func(text string) {
		d, err := time.ParseDuration(text)
		if err != nil {
			cases = append(cases, []any{"ParseDuration", text, nil, err.Error()})
		} else {
			cases = append(cases, []any{"ParseDuration", text, int64(d), nil})
		}
	}
	atoi := func(text string) {
		n, err := strconv.Atoi(text)
		if err != nil {
			cases = append(cases, []any{"Atoi", text, nil, err.Error()})
		} else {
			cases = append(cases, []any{"Atoi", text, n, nil})
		}
	}
	for _, n := range durationStringCurated {
		str(n)
	}
	for _, text := range durationParseCurated {
		parse(text)
	}
	for _, text := range atoiCurated {
		atoi(text)
	}
	r := newRNG(6)
	for range durationStringRandom {
		magnitude := r.intn(19) // 10^0 .. 10^18
		n := int64(r.next() % uint64(math.Pow10(magnitude)*9+1))
		if r.chance(20) {
			n = int64(r.next())
		}
		if r.chance(30) {
			n = -n
		}
		if r.chance(20) {
			n -= n % int64(math.Pow10(r.intn(10)))
		}
		str(n)
	}
	units := []string{"ns", "us", "µs", "μs", "ms", "s", "m", "h", "", "d", "S", "x"}
	for range durationParseRandom {
		var b strings.Builder
		b.WriteString(pick(r, []string{"", "", "", "-", "+"}))
		for range r.between(1, 3) {
			b.WriteString(digits(r, 0, 4, "0123456789"))
			if r.chance(30) {
				b.WriteString("." + digits(r, 0, 12, "0123456789"))
			}
			if r.chance(3) {
				b.WriteString(digits(r, 15, 25, "0123456789"))
			}
			b.WriteString(pick(r, units))
		}
		parse(b.String())
	}
	for range atoiRandom {
		text := pick(r, []string{"", "", "-", "+"}) + digits(r, 0, 21, "0123456789")
		if r.chance(5) {
			text += pick(r, []string{"x", " ", "_1", ".0"})
		}
		atoi(text)
	}
	return cases
}
