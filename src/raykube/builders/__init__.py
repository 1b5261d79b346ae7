"""Pure builders: a Ray custom resource in, the Kubernetes objects KubeRay would create out. No I/O (issue 5).

The Go behaviour those objects' bytes depend on (quoting, JSON, YAML, quantities, the spec hash's struct encoding) is
:mod:`raykube.golang`, below this layer."""
