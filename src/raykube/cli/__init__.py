"""The ``raykube`` command (typer; rich for humans only) and the ``kubectl ray`` plugin (``cli/kubectl_ray``).

Besides option parsing and output, it holds whole workflows of their own: ``install`` (CRDs and the operator's
manifests), ``sandbox`` (the local control plane), ``demo`` (the README's walk-through), ``doctor``, ``conformance``
(KubeRay's e2e tests run against raykube) and the plugin's commands (``job submit``, ``log``, ``session``). The
operator itself, the controllers and the doctor's rules live in the library packages it calls."""
