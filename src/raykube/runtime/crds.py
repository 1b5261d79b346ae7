"""Installing the ray.io CRDs: server-side apply (they are far beyond client-side apply's 256 KiB annotation), then
wait until the API server reports each one Established and its names accepted."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lightkube import AsyncClient
from lightkube.generic_resource import create_global_resource

from raykube.waiting import NotYet, wait_for

FIELD_MANAGER = "raykube"

# A generic resource keeps the CRD as the exact dict we generated; typed models could drop schema keywords.
_CRD = create_global_resource("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions")


def _conditions(crd: Mapping[str, Any]) -> dict[str, str]:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return {c.get("type", ""): c.get("status", "") for c in conditions}


async def install_crds(
    client: AsyncClient, crds: Mapping[str, Mapping[str, Any]], established_within: float = 60
) -> list[str]:
    """Apply every CRD (taking ownership of the fields we generate) and wait until all are Established."""
    names = []
    for crd in crds.values():
        await client.apply(_CRD.from_dict(dict(crd)), field_manager=FIELD_MANAGER, force=True)
        names.append(crd["metadata"]["name"])

    async def established() -> bool | NotYet:
        for name in names:
            current: dict[str, Any] = (await client.get(_CRD, name)).to_dict()  # type: ignore[no-untyped-call]
            conditions = _conditions(current)
            if conditions.get("Established") != "True" or conditions.get("NamesAccepted") != "True":
                return NotYet(f"{name}: {conditions}")
        return True

    await wait_for(established, established_within, what="the ray.io CRDs to be Established")
    return names
