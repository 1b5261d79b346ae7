package main

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

const (
	quantityRandom    = 4000
	quantityAddRandom = 2000
)

var quantityCurated = []string{
	"1000m", "0.5", "1e3", "1E3", "2Gi", "1.5Gi", "100M", "0", "+1", ".5", "1.", "12e-3", "5Ki", "1024Mi", "100n",
	"0.1m", "1.000", "1.500", "1.625", "2048Ki", "1e-9", "0.0000000001", "1.5e2", "-1", "0Gi", "01", "8Gi", "1.G",
	"1000E", "1500E", "1e21", "9223372036854775807", "16Ei", "-0", "1.e3", "00100", "12015.625Ki", "12304000",
	" 2 ", "lots", "1e3m", "", "1Ki5", "e3", "1.2.3", "--1",
}

func init() {
	register(family{
		name:   "quantity",
		checks: "raykube.golang.quantity.marshaled(text) (MarshalJSON) and format_quantity(parse_quantity(text.strip()), exact=True) (the canonical String), or that both refuse the text",
		calls:  "Quantity.UnmarshalJSON of the text as a JSON string (ParseQuantity of the trimmed text), then MarshalJSON, and String() of a copy negated twice (Neg clears the text ParseQuantity kept)",
		fields: []string{"text", "marshaled", "canonical", "error"},
		notes: []string{fmt.Sprintf("%d curated texts, then %d random ones (SplitMix64, seed 7): sign, 1 to 20 digits, an optional fraction, and a binary, decimal or exponent suffix (exponents -40 to 40), some malformed.",
			len(quantityCurated), quantityRandom)},
		cases: quantityCases, curated: len(quantityCurated),
		mods: []string{"k8s.io/apimachinery", "gopkg.in/inf.v0"},
	})
	register(family{
		name:   "quantity_add",
		checks: "raykube.golang.quantity.format_quantity(sum_quantities([parse_quantity(a), parse_quantity(b)]), exact=True)",
		calls:  "q := resource.MustParse(a); q.Add(resource.MustParse(b)); q.String()",
		fields: []string{"a", "b", "sum"},
		notes:  []string{fmt.Sprintf("%d random pairs of valid quantities (SplitMix64, seed 8).", quantityAddRandom)},
		cases:  quantityAddCases,
		mods:   []string{"k8s.io/apimachinery", "gopkg.in/inf.v0"},
	})
}

var quantitySuffixes = []string{"", "", "", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}

func randomQuantity(r *rng, valid bool) string {
	var b strings.Builder
	b.WriteString(pick(r, []string{"", "", "", "+", "-"}))
	whole := digits(r, 0, 20, "0123456789")
	if r.chance(60) && len(whole) > 6 {
		whole = whole[:r.between(1, 6)]
	}
	b.WriteString(whole)
	if whole == "" || r.chance(35) {
		b.WriteString("." + digits(r, 0, 12, "0123456789"))
	}
	if r.chance(20) {
		b.WriteString(pick(r, []string{"e", "E"}) + fmt.Sprint(r.between(-40, 40)))
	} else {
		b.WriteString(pick(r, quantitySuffixes))
	}
	text := b.String()
	if !valid && r.chance(5) {
		text += pick(r, []string{"x", "i", "5", " ", "m"})
	}
	return text
}

func canonical(q resource.Quantity) string {
	q = q.DeepCopy()
	q.Neg()
	q.Neg()
	return q.String()
}

func quantityCase(text string) []any {
	var q resource.Quantity
	if err := q.UnmarshalJSON(marshal(text)); err != nil {
		return []any{text, nil, nil, err.Error()}
	}
	data, err := q.MarshalJSON()
	if err != nil {
		panic(err)
	}
	return []any{text, strings.Trim(string(data), `"`), canonical(q), nil}
}

func quantityCases() [][]any {
	var cases [][]any
	for _, text := range quantityCurated {
		cases = append(cases, quantityCase(text))
	}
	r := newRNG(7)
	for range quantityRandom {
		cases = append(cases, quantityCase(randomQuantity(r, false)))
	}
	return cases
}

func quantityAddCases() [][]any {
	var cases [][]any
	r := newRNG(8)
	for len(cases) < quantityAddRandom {
		a, b := randomQuantity(r, true), randomQuantity(r, true)
		qa, errA := resource.ParseQuantity(a)
		qb, errB := resource.ParseQuantity(b)
		if errA != nil || errB != nil {
			continue
		}
		qa.Add(qb)
		cases = append(cases, []any{a, b, qa.String()})
	}
	return cases
}
