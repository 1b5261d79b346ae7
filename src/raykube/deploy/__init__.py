"""Installing raykube's operator into a cluster the way KubeRay's chart installs KubeRay: used by `raykube install`,
the demo, `make conformance` and the tests.

- :mod:`raykube.deploy.manifests`: the Helm chart ``helm/raykube-operator`` rendered (with the sandbox's Helm build)
  into the checked-in ``config/operator/`` manifests, loading them and moving them to another namespace.
- :mod:`raykube.deploy.install`: applying the ray.io CRDs and those manifests, then waiting until the operator's
  Deployment is Available.

Nothing here prints: progress goes to the caller's ``on_progress`` callable, failures are :class:`InstallError` (or
the ``ApiError``/``WaitTimeout`` that caused them). Only ``raykube.cli`` imports this package (see the import-linter
contracts in ``pyproject.toml``).
"""
