// Command extract copies KubeRay's spec hash functions out of the ray-operator module into the hash helper,
// so the helper compiles exactly KubeRay's code without building the packages that hold it.
//
// utils.GenerateHashWithoutReplicasAndWorkersToDelete needs nothing but encoding/json and the API types, but its
// package (controllers/ray/utils) imports controller-runtime's manager and client-go: about 680 packages, minutes
// of compiling on a small machine, for three small functions. So `go generate` runs this program, which finds the
// module's source (`go list -m -json`: the directory a `replace` in go.mod names, such as a KubeRay checkout of a
// release the module proxy does not serve; else `go mod download -json`: the module in Go's module cache at the
// version go.mod requires), parses the source files with go/parser, and writes the wanted function declarations,
// unchanged, with the imports they use, into one file of package main. A function that is missing or that uses
// another function of its package fails to compile, loudly.
//
// Usage (from hash/main.go's go:generate line): go run ../extract -o zz_kuberay.go
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

const module = "github.com/ray-project/kuberay/ray-operator"

// wanted lists, per source file of the module, the functions to copy.
var wanted = []struct {
	file  string
	funcs []string
}{
	{"controllers/ray/utils/util.go", []string{"GenerateJsonHash", "GenerateHashWithoutReplicasAndWorkersToDelete"}},
	{"controllers/ray/raycluster_controller.go", []string{"setDefaults"}},
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "extract: "+format+"\n", args...)
	os.Exit(1)
}

// moduleDir returns the directory of the module's source and the version to name it by: the directory a `replace`
// of the module points to (a KubeRay checkout, for a release the module proxy does not serve), else the required
// version downloaded into (or found in) Go's module cache.
func moduleDir() (string, string) {
	out, err := exec.Command("go", "list", "-m", "-json", module).Output()
	if err != nil {
		fail("go list -m %s: %v", module, err)
	}
	var listed struct {
		Version string
		Replace *struct{ Path, Version, Dir string }
	}
	if err := json.Unmarshal(out, &listed); err != nil {
		fail("go list -m %s: %v", module, err)
	}
	if listed.Replace != nil && listed.Replace.Version == "" { // replaced by a directory
		if listed.Replace.Dir == "" {
			fail("%s is replaced by %s, which is not a directory with a go.mod", module, listed.Replace.Path)
		}
		return listed.Replace.Dir, fmt.Sprintf("%s (replaced by %s)", listed.Version, listed.Replace.Dir)
	}
	// Not replaced, or replaced by another module version: go mod download fetches what is in effect.
	out, err = exec.Command("go", "mod", "download", "-json", module).Output()
	if err != nil {
		fail("go mod download %s: %v", module, err)
	}
	var info struct{ Dir, Version, Error string }
	if err := json.Unmarshal(out, &info); err != nil || info.Error != "" || info.Dir == "" {
		fail("go mod download %s gave no module: %s %v", module, info.Error, err)
	}
	if listed.Replace != nil {
		return info.Dir, fmt.Sprintf("%s (replaced by %s@%s)", listed.Version, listed.Replace.Path, listed.Replace.Version)
	}
	return info.Dir, info.Version
}

func importName(spec *ast.ImportSpec) string {
	value, _ := strconv.Unquote(spec.Path.Value)
	if spec.Name != nil {
		return spec.Name.Name
	}
	return path.Base(value)
}

func main() {
	output := flag.String("o", "zz_kuberay.go", "file to write")
	flag.Parse()
	dir, version := moduleDir()

	fset := token.NewFileSet()
	imports := map[string]string{} // import line -> "" (a set)
	var decls bytes.Buffer
	for _, source := range wanted {
		file, err := parser.ParseFile(fset, filepath.Join(dir, source.file), nil, parser.SkipObjectResolution)
		if err != nil {
			fail("%v", err)
		}
		byName := map[string]*ast.FuncDecl{}
		for _, decl := range file.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil {
				byName[fn.Name.Name] = fn
			}
		}
		specs := map[string]*ast.ImportSpec{}
		for _, spec := range file.Imports {
			specs[importName(spec)] = spec
		}
		for _, name := range source.funcs {
			fn, ok := byName[name]
			if !ok {
				fail("%s has no function %s", source.file, name)
			}
			ast.Inspect(fn, func(node ast.Node) bool {
				if sel, ok := node.(*ast.SelectorExpr); ok {
					if id, ok := sel.X.(*ast.Ident); ok {
						if spec, ok := specs[id.Name]; ok {
							line := spec.Path.Value
							if spec.Name != nil {
								line = spec.Name.Name + " " + line
							}
							imports[line] = ""
						}
					}
				}
				return true
			})
			fn.Doc = nil
			fmt.Fprintf(&decls, "\n// %s is %s's, from %s.\n", name, source.file, module+"@"+version)
			if err := format.Node(&decls, fset, fn); err != nil {
				fail("%v", err)
			}
			decls.WriteString("\n")
		}
	}

	lines := make([]string, 0, len(imports))
	for line := range imports {
		lines = append(lines, "\t"+line)
	}
	sort.Strings(lines)
	var out bytes.Buffer
	fmt.Fprintf(&out, "// Code generated by tools/kuberay/extract from %s@%s; DO NOT EDIT.\n\n", module, version)
	fmt.Fprintf(&out, "package main\n\nimport (\n%s\n)\n%s", strings.Join(lines, "\n"), decls.String())
	formatted, err := format.Source(out.Bytes())
	if err != nil {
		fail("formatting the extracted code: %v", err)
	}
	if err := os.WriteFile(*output, formatted, 0o644); err != nil {
		fail("%v", err)
	}
}
