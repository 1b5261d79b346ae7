"""Installing the ray.io CRDs: server-side apply (they are far beyond client-side apply's 256 KiB annotation), then
wait until the API server reports each one Established and its names accepted."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from raykube.kube.client import Kube
from raykube.kube.resources import CRDS
from raykube.waiting import NotYet, wait_for

FIELD_MANAGER = "raykube"


def _conditions(crd: Mapping[str, Any]) -> dict[str, str]:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return {c.get("type", ""): c.get("status", "") for c in conditions}


async def install_crds(
    client: Kube, crds: Mapping[str, Mapping[str, Any]], established_within: float = 60
) -> list[str]:
    """Apply every CRD (taking ownership of the fields we generate) and wait until all are Established.

    The CRDs go as the exact dicts we generated: nothing on the way decodes them into models that could drop schema
    keywords."""
    names = []
    for crd in crds.values():
        await client.apply(CRDS, crd, field_manager=FIELD_MANAGER)
        names.append(crd["metadata"]["name"])

    async def established() -> bool | NotYet:
        for name in names:
            conditions = _conditions(await client.get(CRDS, name))
            if conditions.get("Established") != "True" or conditions.get("NamesAccepted") != "True":
                return NotYet(f"{name}: {conditions}")
        return True

    await wait_for(established, established_within, what="the ray.io CRDs to be Established")
    return names
