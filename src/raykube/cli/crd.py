"""``raykube crd generate|print|install``: the ray.io CRDs, generated from raykube's own models."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from raykube.cli import aio
from raykube.cli.output import fail, progress, success

app = typer.Typer(no_args_is_help=True, help="The ray.io CustomResourceDefinitions (RayCluster, RayJob, ...).")

KubeconfigOption = Annotated[
    Path | None, typer.Option(help="Kubeconfig to use (default: $KUBECONFIG, then ~/.kube/config).")
]


@app.command()
def generate(
    output_dir: Annotated[Path, typer.Option(help="Where to write the CRDs.")] = Path("config/crd"),
) -> None:
    """Regenerate the CRDs from raykube.api and the pinned Kubernetes OpenAPI (needs Go's module cache)."""
    from raykube.api import crd as crd_generation  # noqa: PLC0415 - heavy imports load per command
    from raykube.api import k8s_openapi  # noqa: PLC0415

    try:
        definitions = k8s_openapi.definitions()
    except k8s_openapi.OpenAPIUnavailable as exc:
        fail(str(exc))
    output_dir.mkdir(parents=True, exist_ok=True)
    for name, crd in crd_generation.generate_all(definitions).items():
        path = output_dir / name
        text = crd_generation.render(crd)
        changed = not path.exists() or path.read_text() != text
        path.write_text(text)
        progress(f"{'wrote' if changed else 'unchanged'} {path}")
    success(f"CRDs generated in {output_dir}")


@app.command(name="print")
def print_() -> None:
    """Print the CRDs as one YAML stream (for GitOps: `raykube crd print > crds.yaml`)."""
    from raykube.api import crd as crd_generation  # noqa: PLC0415

    crds = crd_generation.load_generated()
    sys.stdout.write("---\n".join(crd_generation.render(c) for c in crds.values()))


@app.command()
def install(kubeconfig: KubeconfigOption = None) -> None:
    """Install or update the CRDs with server-side apply and wait until they are Established."""
    from raykube.api import crd as crd_generation  # noqa: PLC0415
    from raykube.deploy.install import next_step  # noqa: PLC0415
    from raykube.kube.client import Kube  # noqa: PLC0415
    from raykube.runtime.crds import FIELD_MANAGER, install_crds  # noqa: PLC0415

    crds = crd_generation.load_generated()

    async def run() -> list[str]:
        client = Kube.from_config(kubeconfig, user_agent="raykube", field_manager=FIELD_MANAGER)
        try:
            return await install_crds(client, crds, on_progress=progress)
        finally:
            await client.close()

    try:
        names = aio.run(run())
    except Exception as exc:  # an API or config error: say it plainly, and what to run next
        fail(f"installing the CRDs failed: {exc}\n{next_step(exc)}")
    success(f"installed {', '.join(names)}")
