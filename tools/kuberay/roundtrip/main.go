// Command roundtrip writes what KubeRay's Go types make of an object: each input line is {"kind": K, "object": O}
// (K one of RayCluster, RayJob, RayService); each output line is json.Marshal of O after decoding it into K's Go
// type as apimachinery's JSON serializer does (sigs.k8s.io/json, case-sensitive, integers kept). That is the body
// of KubeRay's Update and Create calls, and of its status Updates: tools/kuberay/generate.py records the answers in
// tests/vectors/kuberay_roundtrip_v170.json, which raykube's Python round trip (raykube.golang.gojson) is checked
// against.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	kjson "sigs.k8s.io/json"
)

type input struct {
	Kind   string          `json:"kind"`
	Object json.RawMessage `json:"object"`
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "roundtrip: "+format+"\n", args...)
	os.Exit(1)
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 0, 1<<20), 64<<20)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for line := 1; in.Scan(); line++ {
		var case_ input
		if err := json.Unmarshal(in.Bytes(), &case_); err != nil {
			fail("line %d: %v", line, err)
		}
		var object any
		switch case_.Kind {
		case "RayCluster":
			object = &rayv1.RayCluster{}
		case "RayJob":
			object = &rayv1.RayJob{}
		case "RayService":
			object = &rayv1.RayService{}
		default:
			fail("line %d: unknown kind %q", line, case_.Kind)
		}
		if err := kjson.UnmarshalCaseSensitivePreserveInts(case_.Object, object); err != nil {
			fail("line %d: decoding a %s: %v", line, case_.Kind, err)
		}
		encoded, err := json.Marshal(object)
		if err != nil {
			fail("line %d: encoding a %s: %v", line, case_.Kind, err)
		}
		out.Write(encoded)
		out.WriteString("\n")
	}
	if err := in.Err(); err != nil {
		fail("reading: %v", err)
	}
}
