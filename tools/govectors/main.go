// Command govectors writes the test vectors raykube's Go re-implementations are checked against: for each family it
// generates inputs (curated edge cases plus random ones from a fixed seed), asks the Go library for its answer and
// writes tests/vectors/<family>.json. The output is byte-stable: same module versions, same bytes.
//
//	go run . -out ../../tests/vectors            # every family
//	go run . -out ../../tests/vectors cron quote # some of them
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
)

// A family of vectors: the file it writes and how its cases are made.
type family struct {
	name   string
	checks string   // the raykube function(s) compared with these answers
	calls  string   // the Go calls that produced them
	fields []string // what each case's columns are
	notes  []string
	cases  func() [][]any
	// curated: how many of the cases, at the start, are the hand-picked edge cases (the rest are random)
	curated int
	mods    []string // modules whose version decides the answers
}

var families []family

func register(f family) { families = append(families, f) }

func main() {
	out := flag.String("out", "", "directory the vector files are written to (required)")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "usage: go run . -out DIR [family ...]")
		os.Exit(2)
	}
	wanted := map[string]bool{}
	for _, name := range flag.Args() {
		wanted[name] = true
	}
	known := map[string]bool{}
	for _, f := range families {
		known[f.name] = true
	}
	for name := range wanted {
		if !known[name] {
			fmt.Fprintf(os.Stderr, "unknown family %q\n", name)
			os.Exit(2)
		}
	}
	for _, f := range families {
		if len(wanted) > 0 && !wanted[f.name] {
			continue
		}
		cases := f.cases()
		data, err := render(f, cases)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", f.name, err)
			os.Exit(1)
		}
		path := filepath.Join(*out, f.name+".json")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("%-20s %7d cases -> %s\n", f.name, len(cases), path)
	}
}

// moduleVersions: the versions this binary was built with, of the modules a family depends on.
func moduleVersions(paths []string) map[string]string {
	versions := map[string]string{}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		panic("no build info")
	}
	for _, path := range paths {
		for _, dep := range info.Deps {
			if dep.Path == path {
				versions[path] = dep.Version
			}
		}
		if versions[path] == "" {
			panic("module not in the build: " + path)
		}
	}
	return versions
}

func marshal(value any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(value); err != nil {
		panic(err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// render writes the header then one case per line, so that a diff shows which cases changed.
func render(f family, cases [][]any) ([]byte, error) {
	var buf bytes.Buffer
	mods := moduleVersions(f.mods)
	keys := make([]string, 0, len(mods))
	for k := range mods {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	buf.WriteString("{\n")
	fmt.Fprintf(&buf, "  \"generator\": %s,\n", marshal("tools/govectors, family "+f.name+" (make vectors; or: cd tools/govectors && go run . -out ../../tests/vectors "+f.name+")"))
	fmt.Fprintf(&buf, "  \"checks\": %s,\n", marshal(f.checks))
	fmt.Fprintf(&buf, "  \"go_calls\": %s,\n", marshal(f.calls))
	buf.WriteString("  \"modules\": {")
	for i, k := range keys {
		if i > 0 {
			buf.WriteString(",")
		}
		fmt.Fprintf(&buf, "%s: %s", marshal(k), marshal(mods[k]))
	}
	buf.WriteString("},\n")
	notes := f.notes
	if notes == nil {
		notes = []string{}
	}
	fmt.Fprintf(&buf, "  \"notes\": [%s],\n", joinJSON(notes))
	fmt.Fprintf(&buf, "  \"fields\": %s,\n", marshal(f.fields))
	fmt.Fprintf(&buf, "  \"curated\": %d,\n", f.curated)
	fmt.Fprintf(&buf, "  \"count\": %d,\n", len(cases))
	buf.WriteString("  \"cases\": [\n")
	for i, c := range cases {
		if len(c) != len(f.fields) {
			return nil, fmt.Errorf("case %d has %d columns, want %d", i, len(c), len(f.fields))
		}
		buf.WriteString("    ")
		buf.Write(marshal(c))
		if i < len(cases)-1 {
			buf.WriteString(",")
		}
		buf.WriteString("\n")
	}
	buf.WriteString("  ]\n}\n")
	return buf.Bytes(), nil
}

func joinJSON(items []string) string {
	parts := make([]string, len(items))
	for i, item := range items {
		parts[i] = "\n    " + string(marshal(item))
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, ",") + "\n  "
}

// rng is SplitMix64: a generator fully defined here, so the inputs do not depend on the Go version's math/rand.
type rng struct{ state uint64 }

func newRNG(seed uint64) *rng { return &rng{state: seed} }

func (r *rng) next() uint64 {
	r.state += 0x9e3779b97f4a7c15
	z := r.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// intn: a number in [0, n) (the modulo bias is irrelevant here).
func (r *rng) intn(n int) int { return int(r.next() % uint64(n)) }

// between: a number in [low, high].
func (r *rng) between(low, high int) int { return low + r.intn(high-low+1) }

// chance: true with probability percent/100.
func (r *rng) chance(percent int) bool { return r.intn(100) < percent }

func pick[T any](r *rng, items []T) T { return items[r.intn(len(items))] }

// errText: the error's text, or nil when there is none.
func errText(err error) any {
	if err == nil {
		return nil
	}
	return err.Error()
}
