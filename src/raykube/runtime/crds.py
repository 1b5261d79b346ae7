"""Installing the ray.io CRDs: server-side apply (they are far beyond client-side apply's 256 KiB annotation), then
wait until the API server reports each one Established and its names accepted."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from raykube.kube.client import Kube
from raykube.kube.resources import CRDS
from raykube.waiting import NotYet, wait_for

FIELD_MANAGER = "raykube"


def _conditions(crd: Mapping[str, Any]) -> dict[str, str]:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return {c.get("type", ""): c.get("status", "") for c in conditions}


async def install_crds(
    client: Kube,
    crds: Mapping[str, Mapping[str, Any]],
    established_within: float = 60,
    on_progress: Callable[[str], None] | None = None,
) -> list[str]:
    """Apply every CRD (taking ownership of the fields we generate) and wait until all are Established;
    ``on_progress`` hears each step.

    The CRDs go as the exact dicts we generated: nothing on the way decodes them into models that could drop schema
    keywords."""
    tell = on_progress or (lambda _: None)
    names = []
    for crd in crds.values():
        name = crd["metadata"]["name"]
        tell(f"applying customresourcedefinition/{name}")
        await client.apply(CRDS, crd, field_manager=FIELD_MANAGER)
        names.append(name)
    tell(f"waiting up to {established_within:g}s for {len(names)} CRDs to be Established")

    async def established() -> bool | NotYet:
        for name in names:
            conditions = _conditions(await client.get(CRDS, name))
            if conditions.get("Established") != "True" or conditions.get("NamesAccepted") != "True":
                return NotYet(f"{name}: {conditions}")
        return True

    await wait_for(established, established_within, what="the ray.io CRDs to be Established")
    return names
