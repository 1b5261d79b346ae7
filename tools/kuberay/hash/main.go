// Command hash is the reference for raykube's cluster_spec_hash: KubeRay's own
// utils.GenerateHashWithoutReplicasAndWorkersToDelete, fed RayCluster objects. As committed, go.mod requires
// v1.6.1 (from the module proxy; raykube's integration tests run it live); tools/kuberay/generate.py builds it in a
// copy of this module whose go.mod replaces ray-operator with a v1.7.0 checkout, and records its answers.
//
// It reads one RayCluster JSON document a line on stdin, decodes it the way KubeRay's client does (the
// apimachinery JSON serializer of a scheme holding ray.io/v1: case-sensitive field names, unknown fields
// dropped) and prints one line per document:
//
//	<hash of the spec as decoded> <hash after the RayCluster controller's setDefaults>
//
// or "error: <message>" when the document does not decode or hash. The first value is what the RayService
// controller computes (it hashes rayService.spec.rayClusterSpec as read); the second is the
// ray.io/upgrade-strategy-recreate-hash annotation the RayCluster controller writes on head Pods, computed after
// setDefaults (raycluster_controller.go) has made nil rayStartParams maps empty. With -json it prints instead
// Go's json.Marshal of the decoded spec (after setDefaults, nothing cleared), to see where an encoding differs.
//
// KubeRay's functions (GenerateHashWithoutReplicasAndWorkersToDelete, GenerateJsonHash and the RayCluster
// controller's setDefaults) are copied out of the ray-operator module, at the version go.mod requires or from the
// checkout a `replace` names, by `go generate` (../extract writes zz_kuberay.go, not committed): building this
// program then compiles the API types, not the ~680 packages of controller-runtime and client-go that the
// functions' own packages import.
//
// Build: go generate ./hash && go build ./hash (raykube's tests do it once, into the cache: tests/kuberay_hash.py).
package main

//go:generate go run ../extract -o zz_kuberay.go

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

func main() {
	printJSON := flag.Bool("json", false, "print the decoded spec's JSON instead of its hashes")
	flag.Parse()
	scheme := runtime.NewScheme()
	if err := rayv1.AddToScheme(scheme); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	decoder := serializer.NewCodecFactory(scheme).UniversalDeserializer()
	in := bufio.NewReader(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for {
		line, readErr := in.ReadString('\n')
		if strings.TrimSpace(line) != "" {
			fmt.Fprintln(out, hashLine(decoder, []byte(line), *printJSON))
			if in.Buffered() == 0 {
				out.Flush() // a caller writing one line at a time reads each answer before its next question
			}
		}
		if readErr != nil {
			return
		}
	}
}

func hashLine(decoder runtime.Decoder, line []byte, printJSON bool) string {
	obj, _, err := decoder.Decode(line, nil, nil)
	if err != nil {
		return "error: " + oneLine(err)
	}
	cluster, ok := obj.(*rayv1.RayCluster)
	if !ok {
		return fmt.Sprintf("error: not a RayCluster but %T", obj)
	}
	if printJSON {
		setDefaults(cluster)
		data, err := json.Marshal(&cluster.Spec)
		if err != nil {
			return "error: " + oneLine(err)
		}
		return string(data)
	}
	asRead, err := GenerateHashWithoutReplicasAndWorkersToDelete(cluster.Spec)
	if err != nil {
		return "error: " + oneLine(err)
	}
	setDefaults(cluster)
	defaulted, err := GenerateHashWithoutReplicasAndWorkersToDelete(cluster.Spec)
	if err != nil {
		return "error: " + oneLine(err)
	}
	return asRead + " " + defaulted
}

func oneLine(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", " ")
}
