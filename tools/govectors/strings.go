package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"unicode"
)

const quoteRandom = 3000

// Curated strings, as code points (a lone surrogate is what a Python string decoded from JSON "\ud800" holds).
var quoteCurated = []struct {
	label string
	text  []rune
}{
	{"empty", []rune("")},
	{"plain", []rune("plain")},
	{"quotes and backslash", []rune(`say "hi" \ bye`)},
	{"tab, newline, carriage return", []rune("tab\tnew\nline\r")},
	{"short escapes and \\x", []rune("\x00\a\b\v\f\x1b\x7f")},
	{"non-printable BMP", []rune("\u00a0\u00ad\u2028\u200b\ufeff")},
	{"C1 control", []rune("\u0085")},
	{"printable non-ASCII", []rune("é日本😀")},
	{"non-printable astral", []rune("\U000e0001")},
	{"noncharacters", []rune("\U0010ffff\uffff")},
	{"Unicode 15.0 (Go) but not 14.0 (Python 3.11)", []rune("\u0cf3\U0001fa75")},
	{"a lone surrogate is U+FFFD", []rune{'a', 0xD800, 'b'}},
	{"HTML characters", []rune("<a&b>\u2029")},
	{"KubeRay job_test.go runtime env", []rune(`{"test":"test"}`)},
	{"KubeRay job_test.go entrypoint resources", []rune(`{"Custom_1": 1, "Custom_2": 5.5}`)},
}

func init() {
	register(family{
		name:   "golang_quote",
		checks: "raykube.golang.strconv.quote and gojson.json_string of the string made of these code points",
		calls:  "strconv.Quote(s) and json.Marshal(s), s = string(runes) (a surrogate code point becomes U+FFFD there, as Go's JSON decoder makes it)",
		fields: []string{"label", "code_points", "quote", "json"},
		notes: []string{fmt.Sprintf("%d curated strings, then %d random ones (SplitMix64, seed 2) mixing ASCII, controls, Latin-1, the BMP, surrogates, astral planes and code points new in Unicode 15.0.",
			len(quoteCurated), quoteRandom)},
		cases: quoteCases, curated: len(quoteCurated),
	})
	register(family{
		name:   "golang_isprint",
		checks: "raykube.golang.strconv.is_print(chr(c)) for every code point c from 0 to 0x10FFFF",
		calls:  "strconv.IsPrint(rune(c))",
		fields: []string{"first", "last"},
		notes: []string{
			"Each case is a maximal range of code points strconv.IsPrint calls printable; every other code point is not. count is the number of ranges; the code points checked are all 1,114,112.",
			"unicode.Version of the generating Go: " + unicode.Version,
		},
		cases: isprintCases,
	})
}

func quoteCase(label string, runes []rune) []any {
	s := string(runes)
	data, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	points := make([]int, len(runes))
	for i, r := range runes {
		points[i] = int(r)
	}
	return []any{label, points, strconv.Quote(s), string(data)}
}

func quoteCases() [][]any {
	var cases [][]any
	for _, c := range quoteCurated {
		cases = append(cases, quoteCase(c.label, c.text))
	}
	r := newRNG(2)
	unicode15 := []int{0x0CF3, 0x0ECE, 0x10EFD, 0x11241, 0x11B00, 0x11F00, 0x1342F, 0x13455, 0x1B132, 0x1D2C0, 0x1E4D0, 0x1F6DC, 0x1FA75, 0x1FAF8, 0x2B739, 0x31350}
	special := []int{0x7F, 0x85, 0xA0, 0xAD, 0x2028, 0x2029, 0x200B, 0xFEFF, 0xFFFD, 0xFFFE, 0xFFFF, 0x10FFFF, 0x1D173, 0xE0001, 0xF0000}
	for range quoteRandom {
		runes := make([]rune, r.intn(12))
		for i := range runes {
			var c int
			switch r.intn(10) {
			case 0, 1, 2:
				c = r.between(0x20, 0x7E)
			case 3:
				c = r.between(0, 0x1F)
			case 4:
				c = r.between(0x80, 0xFF)
			case 5:
				c = r.between(0x100, 0xFFFF)
			case 6:
				c = r.between(0x10000, 0x10FFFF)
			case 7:
				c = pick(r, unicode15)
			case 8:
				c = pick(r, special)
			default:
				c = r.between(0xD800, 0xDFFF)
			}
			runes[i] = rune(c)
		}
		cases = append(cases, quoteCase("", runes))
	}
	return cases
}

func isprintCases() [][]any {
	var cases [][]any
	start := -1
	for c := 0; c <= unicode.MaxRune+1; c++ {
		printable := c <= unicode.MaxRune && strconv.IsPrint(rune(c))
		if printable && start < 0 {
			start = c
		}
		if !printable && start >= 0 {
			cases = append(cases, []any{start, c - 1})
			start = -1
		}
	}
	return cases
}
