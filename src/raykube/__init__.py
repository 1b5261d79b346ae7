"""raykube: a drop-in KubeRay operator in Python, ``raykube doctor``, and a Docker-free local Kubernetes."""

__version__ = "0.1.0"
