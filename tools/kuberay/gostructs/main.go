// Command gostructs writes src/raykube/golang/gostructs.py: how Go's encoding/json sees every struct reachable
// from KubeRay's rayv1.RayClusterSpec and its RayCluster, RayJob and RayService objects (at the version this
// module requires, or the checkout a `replace` names; the Kubernetes types at the versions its go.mod pins), read
// with reflect from the compiled types themselves, so nothing is transcribed by hand.
//
// For each struct: its JSON fields in encoding order (embedded structs inlined where they sit), each with its
// JSON name, its Go type written as a small type expression, and its omitempty/omitzero options. Types with
// their own JSON methods (resource.Quantity, intstr.IntOrString, metav1.Time, ...) are listed apart: raykube's
// marshaller has a handler for each and refuses a table naming one it does not know.
//
// Run (from tools/kuberay): go run ./gostructs > ../../src/raykube/golang/gostructs.py writes the table of the
// module go.mod requires. raykube's committed table is KubeRay v1.7.0's, which the module proxy does not serve:
// tools/kuberay/generate.py runs this program in a copy of the module whose go.mod replaces ray-operator with a
// v1.7.0 checkout, and passes -regenerate, the command the header names. A replaced module is named in the header
// by its required version and the checkout's git commit.
package main

import (
	"encoding"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"reflect"
	"regexp"
	"runtime/debug"
	"sort"
	"strings"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
)

var (
	jsonMarshaler   = reflect.TypeFor[json.Marshaler]()
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textMarshaler   = reflect.TypeFor[encoding.TextMarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	isZeroer        = reflect.TypeFor[interface{ IsZero() bool }]()
	versionDir      = regexp.MustCompile(`^v\d+(alpha\d+|beta\d+)?$`)
)

type field struct {
	name  string
	expr  string
	flags int
}

type generator struct {
	structs map[string][]field
	custom  map[string]string // name -> Go kind of the custom type
	zeroers map[string]bool   // custom types with an IsZero method
	aliases map[string]string // short package alias -> package path
	queue   []reflect.Type
}

const (
	omitEmpty = 1
	omitZero  = 2
)

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "gostructs: "+format+"\n", args...)
	os.Exit(1)
}

// alias names a package by its last path element, or the last two when the last is a version (core/v1: corev1).
func (g *generator) alias(pkg string) string {
	base := path.Base(pkg)
	if versionDir.MatchString(base) {
		base = path.Base(path.Dir(pkg)) + base
	}
	if other, ok := g.aliases[base]; ok && other != pkg {
		fail("packages %s and %s would share the alias %s", other, pkg, base)
	}
	g.aliases[base] = pkg
	return base
}

func (g *generator) name(t reflect.Type) string {
	if t.Name() == "" || t.PkgPath() == "" || strings.ContainsAny(t.Name(), "[]") {
		fail("cannot name type %v", t)
	}
	return g.alias(t.PkgPath()) + "." + t.Name()
}

func isCustom(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	for _, iface := range []reflect.Type{jsonMarshaler, jsonUnmarshaler, textMarshaler, textUnmarshaler} {
		if t.Implements(iface) || p.Implements(iface) {
			return true
		}
	}
	return false
}

// expr writes a Go type as the marshaller reads it: bool, string, int32, float64, ... (named basic types by their
// kind), bytes ([]byte, base64 in JSON), any (interface{}), *T, []T, map[string]T, or a named struct or custom type.
func (g *generator) expr(t reflect.Type) string {
	if t.Kind() != reflect.Pointer && isCustom(t) {
		name := g.name(t)
		g.custom[name] = t.Kind().String()
		if t.Implements(isZeroer) || reflect.PointerTo(t).Implements(isZeroer) {
			g.zeroers[name] = true
		}
		return name
	}
	switch t.Kind() {
	case reflect.Bool, reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return t.Kind().String()
	case reflect.Pointer:
		return "*" + g.expr(t.Elem())
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 && !isCustom(t.Elem()) {
			return "bytes"
		}
		return "[]" + g.expr(t.Elem())
	case reflect.Map:
		if t.Key().Kind() != reflect.String || isCustom(t.Key()) {
			fail("map key %v is not a plain string kind", t.Key())
		}
		return "map[string]" + g.expr(t.Elem())
	case reflect.Interface:
		if t.NumMethod() != 0 {
			fail("non-empty interface %v", t)
		}
		return "any"
	case reflect.Struct:
		name := g.name(t)
		if _, seen := g.structs[name]; !seen {
			g.structs[name] = nil
			g.queue = append(g.queue, t)
		}
		return name
	default:
		fail("unsupported kind %v (%v)", t.Kind(), t)
	}
	return ""
}

// fields lists a struct's JSON fields as encoding/json's typeFields orders them: declaration order, the fields of
// an untagged embedded struct in its place. Name conflicts between levels (Go's dominance rules) are refused
// rather than resolved: the Kubernetes and KubeRay types have none.
func (g *generator) fields(t reflect.Type) []field {
	var out []field
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if sf.Anonymous && name == "" {
			ft := sf.Type
			if ft.Kind() == reflect.Pointer {
				fail("%v embeds the pointer %v: not supported", t, ft)
			}
			if ft.Kind() == reflect.Struct {
				out = append(out, g.fields(ft)...)
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		flags := 0
		for _, opt := range strings.Split(opts, ",") {
			switch opt {
			case "omitempty":
				flags |= omitEmpty
			case "omitzero":
				flags |= omitZero
			case "", "inline":
			case "string":
				fail("%v.%s has the ,string option: not supported", t, sf.Name)
			default:
				fail("%v.%s has the unknown JSON option %q", t, sf.Name, opt)
			}
		}
		if flags&omitZero != 0 && sf.Type.Kind() != reflect.Pointer && !isCustom(sf.Type) &&
			(sf.Type.Implements(isZeroer) || reflect.PointerTo(sf.Type).Implements(isZeroer)) {
			fail("%v.%s is omitzero with an IsZero method on a type without JSON methods: not supported", t, sf.Name)
		}
		out = append(out, field{name, g.expr(sf.Type), flags})
	}
	seen := map[string]bool{}
	for _, f := range out {
		if seen[f.name] {
			fail("%v has two JSON fields named %q", t, f.name)
		}
		seen[f.name] = true
	}
	return out
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

const rayOperator = "github.com/ray-project/kuberay/ray-operator"

// moduleVersions lists the modules the table comes from, and returns the version of KubeRay's. A module replaced by
// a directory (a KubeRay checkout) is named by its required version and the checkout's commit.
func moduleVersions() (string, string) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		fail("no build info")
	}
	var lines []string
	kuberay := ""
	for _, dep := range info.Deps {
		switch dep.Path {
		case rayOperator, "k8s.io/api", "k8s.io/apimachinery":
			line := fmt.Sprintf("#   %s %s", dep.Path, dep.Version)
			if dep.Replace != nil {
				if dep.Replace.Version != "" && dep.Replace.Version != "(devel)" { // a directory has no version
					fail("%s is replaced by %s@%s: only a replacement by a checkout is supported", dep.Path,
						dep.Replace.Path, dep.Replace.Version)
				}
				line += " (a checkout at " + checkoutCommit(dep.Replace.Path) + ")"
			}
			if dep.Path == rayOperator {
				kuberay = dep.Version
			}
			lines = append(lines, line)
		}
	}
	if kuberay == "" {
		fail("%s is not in the build info", rayOperator)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n"), kuberay
}

// checkoutCommit is the git commit of the checkout holding dir, refused when anything in dir differs from it.
func checkoutCommit(dir string) string {
	out, err := exec.Command("git", "-C", dir, "rev-parse", "HEAD").Output()
	if err != nil {
		fail("%s: not a git checkout (git rev-parse HEAD: %v)", dir, err)
	}
	status, err := exec.Command("git", "-C", dir, "status", "--porcelain", "--untracked-files=no", "--", ".").Output()
	if err != nil || len(strings.TrimSpace(string(status))) != 0 {
		fail("%s differs from its commit (git status: %v):\n%s", dir, err, status)
	}
	return "commit " + strings.TrimSpace(string(out))
}

// header is the generated module's start; ´ stands for a backquote, which a Go raw string cannot hold.
const header = `"""How Go's encoding/json sees KubeRay %s's RayCluster, RayJob and RayService: every struct, field by field.

GENERATED by tools/kuberay/gostructs (reflect over the compiled Go types); do not edit. Regenerate with:

    %s

One unit however long: one table of one type graph (the three objects and every struct they reach), written whole by
the generator, so there is no seam to split it along. ROOT is the RayClusterSpec (what the spec hashes encode), ROOTS
the objects by kind.

Read by :mod:´raykube.golang.gojson´. A field is ´´(json name, type, flags)´´ in encoding order (embedded structs
inlined in place); flags are OMITEMPTY and OMITZERO. Types: ´´bool´´, ´´string´´, ´´int32´´, ´´float64´´ ... (named
basic types by their kind), ´´bytes´´ ([]byte), ´´any´´ (interface{}), ´´*T´´, ´´[]T´´, ´´map[string]T´´, a struct of
STRUCTS, or a type of CUSTOM (its own JSON methods; the value is its Go kind).
"""

# Go modules:
%s

from typing import Final

OMITEMPTY: Final = 1
OMITZERO: Final = 2

ROOT: Final = %s

# The whole objects, by kind (metadata as metav1.ObjectMeta, spec and status).
ROOTS: Final[dict[str, str]] = {
`

func main() {
	regenerate := flag.String("regenerate", "cd tools/kuberay && go run ./gostructs > ../../src/raykube/golang/gostructs.py",
		"the command that regenerates the file, for its header")
	flag.Parse()
	g := &generator{
		structs: map[string][]field{},
		custom:  map[string]string{},
		zeroers: map[string]bool{},
		aliases: map[string]string{},
	}
	root := g.expr(reflect.TypeFor[rayv1.RayClusterSpec]())
	// The objects KubeRay reads and writes whole (an Update after adding a finalizer, a Create of the RayCluster of
	// a RayJob or RayService, a status Update): what the API server stores is their encoding.
	roots := [][2]string{
		{"RayCluster", g.expr(reflect.TypeFor[rayv1.RayCluster]())},
		{"RayJob", g.expr(reflect.TypeFor[rayv1.RayJob]())},
		{"RayService", g.expr(reflect.TypeFor[rayv1.RayService]())},
	}
	for len(g.queue) > 0 {
		t := g.queue[0]
		g.queue = g.queue[1:]
		g.structs[g.name(t)] = g.fields(t)
	}

	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	modules, kuberay := moduleVersions()
	w(strings.ReplaceAll(header, "´", "`"), kuberay, *regenerate, modules, quote(root))
	for _, r := range roots {
		w("    %s: %s,\n", quote(r[0]), quote(r[1]))
	}
	w("}\n\n# Types with their own JSON methods -> their Go kind.\nCUSTOM: Final[dict[str, str]] = {\n")
	for _, name := range sortedKeys(g.custom) {
		w("    %s: %s,\n", quote(name), quote(g.custom[name]))
	}
	w("}\n\n# The CUSTOM types with an IsZero method (what omitzero asks).\n")
	w("ZEROERS: Final[frozenset[str]] = frozenset(\n    {\n")
	for _, name := range sortedKeys(g.zeroers) {
		w("        %s,\n", quote(name))
	}
	w("    }\n)\n\nSTRUCTS: Final[dict[str, tuple[tuple[str, str, int], ...]]] = {\n")
	for _, name := range sortedKeys(g.structs) {
		fields := g.structs[name]
		switch {
		case len(fields) == 0:
			w("    %s: (),\n", quote(name))
		case len(fields) == 1 && len(name)+len(fields[0].name)+len(fields[0].expr)+23 <= 120:
			// One field on one line, as ruff format writes a one-element tuple that fits.
			w("    %s: ((%s, %s, %d),),\n", quote(name), quote(fields[0].name), quote(fields[0].expr), fields[0].flags)
		default:
			w("    %s: (\n", quote(name))
			for _, f := range fields {
				w("        (%s, %s, %d),\n", quote(f.name), quote(f.expr), f.flags)
			}
			w("    ),\n")
		}
	}
	w("}\n")
	fmt.Print(b.String())
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
