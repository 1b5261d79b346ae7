package main

import (
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

const yamlRandom = 3000

var yamlCurated = []string{
	"test: test",
	"working_dir: \"https://github.com/ray-project/serve_config_examples/archive/b393e77bbd6aba0881e3d94c05f968f05a387b96.zip\"\npip: [\"python-multipart==0.0.6\"]\n",
	"a: 08", "a: 0o17", "a: 0x1F", "a: -0x1F", "a: 0b101", "a: 0b-101", "a: 1_000", "a: 1e3", "a: 1E400", "a: .5e3",
	"a: 3.10", "a: y", "a: Off", "a:", "a: 2001-12-14", "a: 1:30", "a: 9223372036854775808", "a: 18446744073709551616",
	"a: 1e20", "a: [1, 2.0, 3.5, 1e21, 1e-7, 0.0001]",
	"a: <&>\u2028", // U+2028 ends a plain scalar (a YAML 1.1 line break)
	"a: !!float 1", "a: !!str 1", "a: !foo bar", "a: !!binary aGVsbG8=", "1: a", "1.5: a", "0.1: a", "1e6: x",
	"yes: 1", "b: &x {c: 1}\na:\n  <<: *x\n  d: 2", "a: 1\n---\nb: 2", "", "# only a comment", "- a\n- b",
	"a: .inf", "~: 1", "a: 1\n b: [\n",
}

func init() {
	register(family{
		name:   "yaml_to_json",
		checks: "raykube.golang.goyaml.yaml_to_json(yaml), or the GoError it raises (for go-yaml syntax errors only the \"yaml: line N:\" prefix is compared: the YAML grammar is PyYAML's)",
		calls:  "yaml.YAMLToJSON([]byte(yaml)) of sigs.k8s.io/yaml",
		fields: []string{"yaml", "json", "error"},
		notes: []string{fmt.Sprintf("%d curated documents, then %d random ones (SplitMix64, seed 5): a plain, quoted or tagged scalar as a value, a key, or in a flow list, from a grammar of YAML 1.1 numbers, booleans, nulls, timestamps and words.",
			len(yamlCurated), yamlRandom)},
		cases: yamlCases, curated: len(yamlCurated),
		mods: []string{"sigs.k8s.io/yaml", "go.yaml.in/yaml/v2"},
	})
}

func yamlCase(text string) []any {
	out, err := yaml.YAMLToJSON([]byte(text))
	if err != nil {
		return []any{text, nil, err.Error()}
	}
	return []any{text, string(out), nil}
}

func digits(r *rng, low, high int, alphabet string) string {
	letters := []rune(alphabet)
	var b strings.Builder
	for range r.between(low, high) {
		b.WriteRune(letters[r.intn(len(letters))])
	}
	return b.String()
}

func randomScalar(r *rng) string {
	sign := pick(r, []string{"", "", "", "-", "+"})
	switch r.intn(14) {
	case 0:
		return sign + digits(r, 1, 20, "0123456789")
	case 1:
		return sign + digits(r, 1, 4, "0123456789") + "_" + digits(r, 1, 4, "0123456789_")
	case 2:
		return sign + pick(r, []string{"0x", "0X", "0o", "0b", "0"}) + digits(r, 0, 6, "0123456789abcdefABCDEF_")
	case 3:
		return sign + digits(r, 0, 5, "0123456789") + "." + digits(r, 0, 5, "0123456789")
	case 4:
		return sign + digits(r, 0, 3, "0123456789") + pick(r, []string{".", ""}) + digits(r, 0, 3, "0123456789") +
			pick(r, []string{"e", "E"}) + pick(r, []string{"", "+", "-"}) + digits(r, 0, 3, "0123456789")
	case 5:
		return sign + pick(r, []string{".inf", ".Inf", ".INF", ".nan", ".NaN", ".NAN", "inf", "nan", ".iNf"})
	case 6:
		return pick(r, []string{"y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "true", "True", "TRUE",
			"false", "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF", "tRue", "yEs", "oN"})
	case 7:
		return pick(r, []string{"~", "null", "Null", "NULL", "nULL", ""})
	case 8:
		return fmt.Sprintf("%04d-%02d-%02d", r.between(1, 2100), r.between(1, 12), r.between(1, 31)) +
			pick(r, []string{"", "T10:20:30Z", " 10:20:30.5 -05:00", "t1:02:03.10+01:00", "x"})
	case 9:
		return sign + fmt.Sprintf("%d:%02d", r.between(0, 200), r.intn(60)) + pick(r, []string{"", ":30", ".5"})
	case 10:
		return pick(r, []string{"'", "\""}) + randomScalarNoQuote(r) + pick(r, []string{"'", "\""})
	case 11:
		return pick(r, []string{"!!str ", "!!int ", "!!float ", "!!bool ", "!!null ", "!foo "}) + randomScalarNoQuote(r)
	case 12:
		return digits(r, 1, 1, "abcxyzAZ_") + digits(r, 0, 8, "abcxyz0123456789 ._/-<&>é")
	default:
		return sign + digits(r, 1, 3, "0123456789") + "." + digits(r, 1, 20, "0123456789")
	}
}

// randomScalarNoQuote: a number-like text to put in quotes or after a tag.
func randomScalarNoQuote(r *rng) string {
	return pick(r, []string{"", "-", "+"}) + digits(r, 1, 6, "0123456789") + pick(r, []string{"", ".5", "e3", "x"})
}

func yamlCases() [][]any {
	var cases [][]any
	for _, text := range yamlCurated {
		cases = append(cases, yamlCase(text))
	}
	r := newRNG(5)
	for range yamlRandom {
		scalar := strings.TrimSpace(randomScalar(r))
		var text string
		switch r.intn(5) {
		case 0:
			text = scalar + ": v"
		case 1:
			text = "a: [" + scalar + ", " + strings.TrimSpace(randomScalar(r)) + "]"
		default:
			text = "a: " + scalar
		}
		cases = append(cases, yamlCase(text))
	}
	return cases
}
