package main

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

const (
	float32TextRandom = 2000
	formatRandom      = 800
)

var float32Curated = []string{
	"0.1", "1.1", "2.2", "0.5", "1", "16777217", "123456789", "3.4028235e+38", "1e-45", "1.4e-45", "1e-46", "1e-06",
	"9e-07", "2.5e-07", "1e-05", "1e+21", "-0.0", "3.4028236e+38", "1e+39", "-1e+39", "3.4028235677973366e+38",
	"7.006492321624085354618e-46", "0.000000000000000000000000000000000000000000000700649232162408535461864791644958065640130970938257885878534141944895541342930300743319094181060791015625",
}

var float64Curated = []string{
	"0.1", "1e+21", "1e+20", "1e+16", "1e-07", "1.5e-07", "1e-06", "0.0001", "123456789012345678848", "5e-324",
	"1.7976931348623157e+308", "-0.0",
}

func init() {
	register(family{
		name:   "golang_float32",
		checks: "raykube.golang.gojson.float32_from_json(text), then gojson.json_number(v, 32), strconv.format_float(v, 'f', 6, 32) and format_float(v, 'g', -1, 32); or the GoError text",
		calls:  "json.Unmarshal(text, &f) into a float32 f, then json.Marshal(f), fmt.Sprintf(\"%f\", f), strconv.FormatFloat(float64(f), 'g', -1, 32)",
		fields: []string{"text", "json", "percent_f", "g32", "error"},
		notes: []string{fmt.Sprintf("%d curated JSON numbers, then %d random ones (SplitMix64, seed 3): 1 to 25 significant digits, exponents -50 to 40.",
			len(float32Curated), float32TextRandom)},
		cases: float32Cases, curated: len(float32Curated),
	})
	register(family{
		name:   "golang_float64",
		checks: "raykube.golang.gojson.json_number(float(text)) and strconv.format_float(float(text), 'g', -1, 32)",
		calls:  "json.Marshal(f) and strconv.FormatFloat(f, 'g', -1, 32) of f = strconv.ParseFloat(text, 64)",
		fields: []string{"text", "json", "g32"},
		cases:  float64Cases, curated: len(float64Curated),
	})
	register(family{
		name:   "golang_format_float",
		checks: "raykube.golang.strconv.format_float(v, fmt, prec, bits), and gojson.json_number(v, bits) where fmt is \"json\"; v is the IEEE 754 value with these bits",
		calls:  "strconv.FormatFloat(v, fmt, prec, bits); json.Marshal(v) (of a float32 where bits is 32)",
		fields: []string{"bits", "hex", "fmt", "prec", "out"},
		notes: []string{fmt.Sprintf("%d random float64 values and %d random float32 values (SplitMix64, seed 4; half uniform bit patterns, half short decimals), each with e, f and g at prec -1 (shortest), f at prec 6 (fmt's %%f) and at a prec 0 to 17 drawn from its bits, and json (raykube's format_float has a fixed precision for f only); plus signed zeros and the extremes.",
			formatRandom, formatRandom)},
		cases: formatCases, curated: formatRowsPer * (len(extremes64) + len(extremes32)),
	})
}

func jsonText(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return "error: " + err.Error()
	}
	return string(data)
}

func float32Case(text string) []any {
	var f float32
	if err := json.Unmarshal([]byte(text), &f); err != nil {
		return []any{text, nil, nil, nil, err.Error()}
	}
	return []any{text, jsonText(f), fmt.Sprintf("%f", f), strconv.FormatFloat(float64(f), 'g', -1, 32), nil}
}

func randomDecimal(r *rng, maxDigits int) string {
	digits := make([]byte, r.between(1, maxDigits))
	for i := range digits {
		digits[i] = byte('0' + r.intn(10))
	}
	digits[0] = byte('1' + r.intn(9))
	text := string(digits)
	if len(text) > 1 && r.chance(60) {
		point := r.between(1, len(text)-1)
		text = text[:point] + "." + text[point:]
	}
	if r.chance(70) {
		text += fmt.Sprintf("e%d", r.between(-50, 40))
	}
	if r.chance(20) {
		text = "-" + text
	}
	return text
}

func float32Cases() [][]any {
	var cases [][]any
	for _, text := range float32Curated {
		cases = append(cases, float32Case(text))
	}
	r := newRNG(3)
	for range float32TextRandom {
		cases = append(cases, float32Case(randomDecimal(r, 25)))
	}
	return cases
}

func float64Cases() [][]any {
	var cases [][]any
	for _, text := range float64Curated {
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			panic(err)
		}
		cases = append(cases, []any{text, jsonText(f), strconv.FormatFloat(f, 'g', -1, 32)})
	}
	return cases
}

// The curated values, each written in formatRowsPer ways.
var (
	extremes64    = []float64{0, math.Copysign(0, -1), math.SmallestNonzeroFloat64, math.MaxFloat64, -math.MaxFloat64, 1, 0.1, 1e21, 1e-7, 123456789}
	extremes32    = []float64{0, math.Copysign(0, -1), math.SmallestNonzeroFloat32, math.MaxFloat32, 1, float64(float32(0.1)), 1e21, 1e-7, 16777216}
	formatRowsPer = 6
)

func formatRows(bits int, value float64) [][]any {
	var hex string
	if bits == 32 {
		hex = fmt.Sprintf("%08x", math.Float32bits(float32(value)))
	} else {
		hex = fmt.Sprintf("%016x", math.Float64bits(value))
	}
	var rows [][]any
	for _, format := range []byte{'e', 'f', 'g'} {
		rows = append(rows, []any{bits, hex, string(format), -1, strconv.FormatFloat(value, format, -1, bits)})
	}
	prec := int(math.Float64bits(value) % 18) // a precision that varies with the value, 0 to 17
	rows = append(rows, []any{bits, hex, "f", prec, strconv.FormatFloat(value, 'f', prec, bits)})
	rows = append(rows, []any{bits, hex, "f", 6, strconv.FormatFloat(value, 'f', 6, bits)})
	var marshalled string
	if bits == 32 {
		marshalled = jsonText(float32(value))
	} else {
		marshalled = jsonText(value)
	}
	if strings.HasPrefix(marshalled, "error: ") {
		panic(marshalled) // finite values only
	}
	rows = append(rows, []any{bits, hex, "json", -1, marshalled})
	if len(rows) != formatRowsPer {
		panic("formatRowsPer is wrong")
	}
	return rows
}

func formatCases() [][]any {
	var cases [][]any
	for _, v := range extremes64 {
		cases = append(cases, formatRows(64, v)...)
	}
	for _, v := range extremes32 {
		cases = append(cases, formatRows(32, float64(float32(v)))...)
	}
	r := newRNG(4)
	for _, bits := range []int{64, 32} {
		for i := 0; i < formatRandom; {
			var v float64
			if r.chance(50) {
				if bits == 64 {
					v = math.Float64frombits(r.next())
				} else {
					v = float64(math.Float32frombits(uint32(r.next())))
				}
			} else {
				parsed, err := strconv.ParseFloat(randomDecimal(r, 8), bits)
				if err != nil {
					continue // out of range for float32
				}
				v = parsed
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			cases = append(cases, formatRows(bits, v)...)
			i++
		}
	}
	return cases
}
