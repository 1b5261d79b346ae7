"""Pure builders: a Ray custom resource in, the Kubernetes objects KubeRay would create out. No I/O (issue 5)."""
