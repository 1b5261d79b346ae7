package main

import (
	"fmt"
	"strings"

	goyaml "go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/yaml"
)

const serveConfigRandom = 600

// The serve config of KubeRay's RayService sample (ray-service.sample.yaml's shape, trimmed); raykube's own input.
const serveConfigSample = `applications:
  - name: fruit_app
    import_path: fruit.deployment_graph
    route_prefix: /fruit
    deployments:
      - name: MangoStand
        num_replicas: 2
        user_config:
          price: 3
        ray_actor_options:
          num_cpus: 0.1
`

// Curated serve configs: the inputs of raykube's tests (tests/unit/test_builders_rayservice.py looks them up by their
// YAML, tests/unit/test_golang_formats.py the "json escaping" one by its label), then edge cases of KubeRay's
// YAML -> JSON -> map[string]any -> JSON path. Every one is also compared by tests/vectors/compare.py.
var serveConfigCurated = []struct {
	label          string
	yaml           string
	targetCapacity any // nil, or the int32 KubeRay adds as "target_capacity" (an incremental upgrade)
}{
	{"sample", serveConfigSample, nil},
	{"empty config", "", nil},
	{"comment", "# only a comment\n", nil},
	{"null", "null", nil},
	{"go-yaml v2 scalars, int64 or float64", "a: 1.0\nb: 1e3\nc: 18446744073709551615\nd: 9223372036854775807\ne: -9223372036854775809\nf: 0.1\n" +
		"g: 1e21\nh: 1e-7\ni: 0x1F\nj: 0o17\nk: yes\nl: off\nm: ~\nn: 2001-12-14\n", nil},
	{"HTML escaped", "x: '<&>'\n", nil},
	{"first document only", "a: b\n---\nc: d\n", nil},
	{"list", "- a\n- b\n", nil},
	{"string", "hello", nil},
	{"NaN", "x: .nan\n", nil},
	{"Inf", "x: .inf\n", nil},
	{"target capacity", "b: 1\n", int32(50)},
	{"target capacity replaces the config's", "target_capacity: 3.5\nb: 1\n", int32(0)},
	{"target capacity of an empty config", "", int32(100)},
	{"json escaping", "b: [\"<a&b>\", \"\\u2028\\u2029\", \"\\x01\\x7f\", null, true, 1, 0.5]\na: 1.1\n", nil},
	{"number", "1", nil},
	{"bool", "true", nil},
	{"empty flow map", "{}", nil},
	{"empty flow list", "[]", nil},
	{"JSON document", `{"b": [1, 2.5, "x"], "a": {"c": null}}`, nil},
	{"first document empty", "---\n---\na: 1\n", nil},
	{"negative zero", "a: -0.0\nb: -0\nc: [-0.0, -0e3, -.0]\n", nil},
	{"big and small numbers", "a: 123456789012345678901234567890\nb: 1e400\nc: -1e400\nd: 1e-400\ne: 9007199254740993\n" +
		"f: 9223372036854775808\ng: -9223372036854775808\nh: 1e20\ni: 1e15\nj: 123456789.125\nk: 0.000001\nl: 0.0000001\n", nil},
	{"YAML 1.1 numbers", "a: 0x10\nb: .5\nc: 1e3\nd: 1_000\ne: 0b101\nf: 08\ng: 010\nh: +12\ni: 1:30\nj: .5e3\nk: 3.10\n", nil},
	{"YAML 1.1 booleans and nulls", "a: yes\nb: no\nc: on\nd: off\ne: y\nf: N\ng: True\nh: NULL\ni: ~\nj:\nk: nULL\nl: tRue\n", nil},
	{"non-string keys", "1: a\n-2: b\n1.5: c\n1e3: d\ntrue: e\nno: f\n0x10: g\n.5: h\n", nil},
	{"nested non-string keys", "a:\n  1: x\n  on: y\n  2.50: z\n  b: [ {3: w}, {off: v} ]\n", nil},
	{"null key", "a: {~: 1}\n", nil},
	{"list key", "a:\n  ? [1, 2]\n  : b\n", nil},
	{"map key", "? {a: 1}\n: b\n", nil},
	{"duplicate keys", "a: 1\nb: 2\na: 3\n", nil},
	{"duplicate booleans", "yes: 1\ntrue: 2\non: 3\n", nil},
	{"anchors and aliases", "base: &b {x: 1, y: [1, 2]}\ncopy: *b\nlist: &l [a, b]\nagain: *l\nword: &w hello\nw2: *w\n", nil},
	{"merge", "base: &b {cpu: 1, mem: 2}\nd:\n  <<: *b\n  mem: 3\n", nil},
	{"merge after a key", "base: &b {cpu: 1, mem: 2}\nd:\n  mem: 3\n  <<: *b\n  gpu: 4\n", nil},
	{"merge of a list", "p: &p {cpu: 1, mem: 1}\nq: &q {mem: 2, gpu: 2}\nd:\n  gpu: 3\n  <<: [*p, *q]\n", nil},
	{"merge of a mapping", "d:\n  cpu: 1\n  <<: {cpu: 2, mem: 2}\n  mem: 3\n", nil},
	{"merge of a scalar", "d:\n  <<: 1\n", nil},
	{"merge of a list with a scalar", "p: &p {cpu: 1}\nd:\n  <<: [*p, 1]\n", nil},
	{"keys 1, true, 0, false and -0.0", "1: a\ntrue: b\n0: c\nfalse: d\n-0.0: e\n", nil},
	{"unicode", "ключ: значение\nemoji: \"\\U0001F600 😀\"\ncjk: 日本語\nnbsp: \"a\\u00a0b\"\n", nil},
	{"line and paragraph separators", "a: \"x\\u2028y\\u2029z\"\nb: \"\\u0085\"\n", nil},
	{"controls", "a: \"\\0\\a\\b\\t\\n\\v\\f\\r\\e\\x7f\"\n", nil},
	{"HTML in keys", "\"<k>&\": v\n", nil},
	{"tags", "a: !!str 1\nb: !!float 1\nc: !!int \"7\"\nd: !foo bar\ne: !!binary aGVsbG8=\nf: !!null ''\n", nil},
	{"bad tag", "a: !!int x\n", nil},
	{"timestamps", "a: 2001-12-14t21:59:43.10-05:00\nb: 2002-12-14\n", nil},
	{"block scalars", "a: |\n  line 1\n  line 2\nb: >\n  folded\n  text\n", nil},
	{"syntax error", "a: 1\n b: [\n", nil},
	{"tab indentation", "a:\n\tb: 1\n", nil},
	{"deep nesting", "a: " + strings.Repeat("[", 40) + strings.Repeat("]", 40) + "\n", nil},
}

func init() {
	register(family{
		name: "serve_config",
		checks: "raykube.builders.rayservice.serve_config_body(yaml, target_capacity=...): the body, or the RayServiceBuildError's text " +
			"(for go-yaml syntax errors only the text up to \"yaml: line N:\" is compared: the YAML grammar is PyYAML's)",
		calls: "KubeRay v1.6.1 updateServeDeployment: serveConfig := make(map[string]any); " +
			"k8s.io/apimachinery/pkg/util/yaml.Unmarshal([]byte(yaml), &serveConfig); serveConfig[\"target_capacity\"] = int32(n) when given; " +
			"k8s.io/apimachinery/pkg/util/json.Marshal(serveConfig) (encoding/json.Marshal)",
		fields: []string{"label", "yaml", "target_capacity", "body", "error"},
		notes: []string{
			fmt.Sprintf("%d curated configs (labelled: raykube's test inputs, then edge cases), then %d random ones (SplitMix64, seed 9): "+
				"block and flow maps and lists up to 4 deep, keys and scalars of YAML 1.1 (numbers, booleans, nulls, timestamps, tags), "+
				"quoted strings with HTML characters, controls, U+2028 and astral characters, anchors, aliases, merges and repeated keys; "+
				"some with a target_capacity.", len(serveConfigCurated), serveConfigRandom),
			"Each answer was computed 5 times and is the same each time (Go iterates maps in random order; keys that become the same JSON key from different YAML values are not generated).",
		},
		cases: serveConfigCases, curated: len(serveConfigCurated),
		mods: []string{"k8s.io/apimachinery", "sigs.k8s.io/yaml", "go.yaml.in/yaml/v2", "sigs.k8s.io/json"},
	})
}

// serveConfigBody: what KubeRay's updateServeDeployment PUTs for this serveConfigV2, or its error's text.
func serveConfigBody(text string, targetCapacity any) (any, any) {
	serveConfig := make(map[string]any)
	if err := yaml.Unmarshal([]byte(text), &serveConfig); err != nil {
		return nil, err.Error()
	}
	if targetCapacity != nil {
		serveConfig["target_capacity"] = targetCapacity.(int32)
	}
	configJSON, err := json.Marshal(serveConfig)
	if err != nil {
		return nil, fmt.Sprintf("failed to marshal converted serve config into bytes: %v", err)
	}
	return string(configJSON), nil
}

func serveConfigCase(label, text string, targetCapacity any) []any {
	body, errText := serveConfigBody(text, targetCapacity)
	for range 4 {
		again, againErr := serveConfigBody(text, targetCapacity)
		if again != body || againErr != errText {
			panic(fmt.Sprintf("serve_config: not deterministic for %q: %v / %v, then %v / %v", text, body, errText, again, againErr))
		}
	}
	return []any{label, text, targetCapacity, body, errText}
}

func serveConfigCases() [][]any {
	var cases [][]any
	for _, c := range serveConfigCurated {
		cases = append(cases, serveConfigCase(c.label, c.yaml, c.targetCapacity))
	}
	r := newRNG(9)
	for range serveConfigRandom {
		g := &configGen{r: r, keys: map[string]string{}}
		var b strings.Builder
		g.blockMap(&b, 0, 0)
		var capacity any
		if r.chance(10) {
			capacity = int32(r.between(0, 100))
		}
		cases = append(cases, serveConfigCase("", b.String(), capacity))
	}
	return cases
}

// configGen writes one random serve config.
type configGen struct {
	r       *rng
	anchors []string          // anchored map values, for aliases and merges
	scalars []string          // anchored scalars
	keys    map[string]string // JSON key -> the Go value of the YAML key that gives it (see key)
	badKey  bool              // a key Go refuses was written (at most one: Go reports the first it meets, in map order)
	n       int
}

var configWords = []string{
	"applications", "name", "import_path", "route_prefix", "deployments", "num_replicas", "user_config",
	"ray_actor_options", "num_cpus", "runtime_env", "working_dir", "pip", "env_vars", "max_ongoing_requests",
	"autoscaling_config", "a", "b", "x", "price", "<b>", "a&b", "ключ", "日本", "é", "_", "key with spaces", "target_capacity",
}

var configKeyScalars = []string{
	"1", "-2", "0", "1.5", "2.50", "1e3", ".5", "0x10", "0o17", "1_000", "true", "yes", "on", "y", "No", "off", "FALSE",
	"'1'", "\"true\"", "\"yes\"", "'1.5'", "2001-12-14", "1:30", "9223372036854775807", "-9223372036854775808", "1e400",
	"'<&>'", "\"\\u2028\"", "\"\\U0001F600\"",
}

var configStrings = []string{
	"\"<a href=\\\"x\\\">&amp;</a>\"", "'<&>'", "\"\\u2028\\u2029\"", "\"\\x7f\\x01\\t\"", "\"\\U0001F600\"", "😀",
	"\"\\ud7ff\\ue000\\ufffd\"", "'it''s'", "\"\\\"quoted\\\" \\\\ back\"", "fruit.deployment_graph", "/fruit",
	"\"https://example.com/a?b=1&c=2\"", "python-multipart==0.0.6", "\"\\0\"", "\"\\u0085\\u00a0\"", "Grüße",
	"\"\\N\\_\\L\\P\"", "\"tab\\there\"", "'  spaced  '", "\"\"", "''", "\"\\e[0m\"",
}

// key writes a key: mostly a word, sometimes a YAML 1.1 scalar (numbers and booleans become JSON keys as text). A
// key whose JSON key another YAML value already gives is not used: Go would keep either, in random map order.
func (g *configGen) key() string {
	for {
		var text string
		switch g.r.intn(10) {
		case 0, 1, 2:
			text = pick(g.r, configKeyScalars)
		case 3:
			text = pick(g.r, configWords) + fmt.Sprint(g.r.intn(4))
		default:
			text = pick(g.r, configWords)
		}
		if strings.ContainsAny(text, " <&>") && !strings.HasPrefix(text, "'") && !strings.HasPrefix(text, "\"") && g.r.chance(50) {
			text = "\"" + text + "\""
		}
		var value any
		if err := goyaml.Unmarshal([]byte(text), &value); err != nil {
			panic(err)
		}
		out, err := jsonKeyOf(text)
		if err != nil {
			continue // e.g. 1e400 is a string key; a key Go refuses is written by badKeyEntry only
		}
		identity := fmt.Sprintf("%T %#v", value, value)
		if seen, ok := g.keys[out]; ok && seen != identity {
			continue
		}
		g.keys[out] = identity
		return text
	}
}

// jsonKeyOf: the JSON key sigs.k8s.io/yaml makes of a YAML key.
func jsonKeyOf(text string) (string, error) {
	var m map[string]any
	if err := yaml.Unmarshal([]byte(text+": 0"), &m); err != nil {
		return "", err
	}
	for k := range m {
		return k, nil
	}
	return "", fmt.Errorf("no key")
}

// plain: a scalar of the YAML family's grammar (yaml.go), but no broken quotes and seldom a tag (which may not fit:
// an error then, and the rest of the config unused).
func (g *configGen) plain() string {
	for {
		text := strings.TrimSpace(randomScalar(g.r))
		switch {
		case text == "" || strings.HasPrefix(text, "'") || strings.HasPrefix(text, "\""):
			continue
		case strings.HasPrefix(text, "!") && g.r.chance(85):
			continue
		case strings.Contains(strings.ToLower(text), "inf") || strings.Contains(strings.ToLower(text), "nan"):
			if g.r.chance(95) { // NaN and infinities: an error, seldom
				continue
			}
		}
		return text
	}
}

// scalar: a value, from the YAML family's grammar of YAML 1.1 scalars or the strings above.
func (g *configGen) scalar() string {
	switch g.r.intn(10) {
	case 0, 1, 2:
		return pick(g.r, configStrings)
	case 3:
		if len(g.scalars) > 0 {
			return "*" + pick(g.r, g.scalars)
		}
		return pick(g.r, configWords)
	case 4:
		if g.r.chance(30) {
			g.n++
			name := fmt.Sprintf("s%d", g.n)
			g.scalars = append(g.scalars, name)
			return "&" + name + " " + g.plain()
		}
		return pick(g.r, []string{"0.1", "2", "-0.0", "1e21", "1e-7", "3.0", "18446744073709551615", "1e3", "0x10", ".5", "yes", "off", "~", "null"})
	default:
		return g.plain()
	}
}

// flow: a scalar or a flow collection, for a block value or inside another flow collection.
func (g *configGen) flow(depth int) string {
	if depth >= 3 || g.r.chance(60) {
		return g.scalar()
	}
	items := make([]string, g.r.between(0, 3))
	if g.r.chance(50) {
		for i := range items {
			items[i] = g.flow(depth + 1)
		}
		return "[" + strings.Join(items, ", ") + "]"
	}
	for i := range items {
		items[i] = g.key() + ": " + g.flow(depth+1)
	}
	return "{" + strings.Join(items, ", ") + "}"
}

// blockMap writes a block mapping's entries at this indentation.
func (g *configGen) blockMap(b *strings.Builder, indent, depth int) {
	pad := strings.Repeat(" ", indent)
	entries := g.r.between(1, 5)
	if depth == 0 {
		entries = g.r.between(1, 7)
	}
	var written []string
	for range entries {
		switch {
		case len(g.anchors) > 0 && g.r.chance(8):
			fmt.Fprintf(b, "%s<<: *%s\n", pad, pick(g.r, g.anchors))
			continue
		case !g.badKey && g.r.intn(1000) < 3:
			g.badKey = true
			fmt.Fprintf(b, "%s%s: %s\n", pad, pick(g.r, []string{"~", "null", "? [1, 2]\n" + pad, "? {a: 1}\n" + pad}), pick(g.r, []string{"1", "x", "true"}))
			continue
		case len(written) > 0 && g.r.chance(6):
			k := pick(g.r, written) // a repeated key: the later value wins
			fmt.Fprintf(b, "%s%s: %s\n", pad, k, g.scalar())
			continue
		}
		k := g.key()
		written = append(written, k)
		b.WriteString(pad + k + ":")
		g.blockValue(b, indent, depth)
	}
}

// blockValue writes the value after "key:" (a scalar or flow on the line, or a block collection below it).
func (g *configGen) blockValue(b *strings.Builder, indent, depth int) {
	if depth >= 3 || g.r.chance(45) {
		b.WriteString(" " + g.flow(depth) + "\n")
		return
	}
	if g.r.chance(55) {
		if g.r.chance(25) {
			g.n++
			name := fmt.Sprintf("m%d", g.n)
			b.WriteString(" &" + name)
			defer func() { g.anchors = append(g.anchors, name) }() // usable once written
		}
		b.WriteString("\n")
		g.blockMap(b, indent+2, depth+1)
		return
	}
	b.WriteString("\n")
	g.blockList(b, indent+pick(g.r, []int{0, 2}), depth+1)
}

// blockList writes a block sequence's items at this indentation.
func (g *configGen) blockList(b *strings.Builder, indent, depth int) {
	pad := strings.Repeat(" ", indent)
	for range g.r.between(1, 4) {
		switch {
		case depth < 3 && g.r.chance(40):
			b.WriteString(pad + "-\n")
			g.blockMap(b, indent+2, depth+1)
		default:
			b.WriteString(pad + "- " + g.flow(depth) + "\n")
		}
	}
}
