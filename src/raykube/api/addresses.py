"""How the API server addresses the four ray.io kinds (the storage version, v1), without their models.

The one definition of these resources: :mod:`raykube.api.resources` hands them out with the models and CRD details,
and ``kubectl ray`` imports them from here so that its start does not load the models (a fifth of a second).
"""

from __future__ import annotations

from typing import Final

from raykube.api import constants as c
from raykube.kube.resources import Resource

GROUP: Final = c.API_GROUP  # KubeRay apis/ray/v1/groupversion_info.go
VERSION: Final = "v1"


def _ray(kind: str, plural: str) -> Resource:
    # spec_status: the schemas crd.py writes; the singular is what the doctor and a dump accept besides the plural.
    return Resource(GROUP, VERSION, kind, plural, spec_status=True, short_names=(kind.lower(),))


RAYCLUSTERS: Final = _ray(c.KIND_RAYCLUSTER, "rayclusters")
RAYJOBS: Final = _ray(c.KIND_RAYJOB, "rayjobs")
RAYSERVICES: Final = _ray(c.KIND_RAYSERVICE, "rayservices")
RAYCRONJOBS: Final = _ray(c.KIND_RAYCRONJOB, "raycronjobs")
BY_KIND: Final = {r.kind: r for r in (RAYCLUSTERS, RAYJOBS, RAYSERVICES, RAYCRONJOBS)}
