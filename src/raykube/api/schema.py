"""How the ray.io models describe their CRD schema: the base model and the markers the CRD generator reads.

The models in this package serve two purposes with one definition:

* **parsing** Ray custom resources read from the API server or from YAML (pydantic v2, camelCase on the wire, unknown
  fields kept in ``model_extra`` so nothing a newer KubeRay adds is lost), and
* **generating** the CRDs (``raykube.api.crd``), which walks the same fields.

Rules that keep the two from disagreeing:

* A field's Python default *is* its CRD default (``replicas: Int32 = 0`` gives ``default: 0``); ``None`` means "no
  default". The API server applies CRD defaults, so parsing a stored object never needs to invent one; dump with
  ``exclude_unset=True`` to get back exactly what was stored.
* Embedded Kubernetes types (Pod templates, Services, env vars, resources, ...) are plain ``dict``/``list`` values
  annotated with :class:`K8s`, whose schema the generator takes from the pinned Kubernetes OpenAPI definitions. They
  are never parsed into typed models, which would drop fields that a newer Kubernetes added.
* Extra schema keywords (formats, minimums, CEL rules) are annotations too, next to the field they constrain.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class RayModel(BaseModel):
    """Base of every ray.io model: camelCase on the wire, snake_case in Python, unknown fields kept."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        extra="allow",
        serialize_by_alias=True,
        validate_by_alias=True,
        validate_by_name=True,
    )

    def to_wire(self) -> dict[str, Any]:
        """The JSON-ready dict of exactly the fields that were set (no invented defaults), camelCase."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


@dataclass(frozen=True, init=False)
class Schema:
    """Extra OpenAPI keywords for the field's CRD schema (``format``, ``minimum``, ...), e.g. ``Schema(minimum=0)``.

    Hashable (typing hashes ``Annotated`` metadata), so values must be hashable too."""

    items: tuple[tuple[str, Any], ...]

    def __init__(self, **keywords: Any) -> None:
        object.__setattr__(self, "items", tuple(sorted(keywords.items())))

    @property
    def keywords(self) -> dict[str, Any]:
        return dict(self.items)


@dataclass(frozen=True)
class K8s:
    """The field holds a Kubernetes type; its schema is ``definition`` in the pinned Kubernetes OpenAPI."""

    definition: str


@dataclass(frozen=True)
class CEL:
    """A ``x-kubernetes-validations`` rule on the field, enforced by the API server."""

    rule: str
    message: str


@dataclass(frozen=True)
class CrdRequired:
    """Required in the CRD even though it has a default (the API server defaults it before validating).

    ``versions`` names the CRD versions that require it (all of them when empty): KubeRay's frozen ``v1alpha1``
    still requires ``rayStartParams`` and ``entrypoint``, which ``v1`` made optional."""

    versions: tuple[str, ...] = ()


@dataclass(frozen=True)
class Versions:
    """The CRD versions whose schema has the field (every served version when a field has no such marker).

    KubeRay froze ``ray.io/v1alpha1`` (deprecated in v1.7.0: "v1alpha1 receives no new fields"), so a field added
    since is :data:`V1_ONLY`; a few old status fields survive only in ``v1alpha1`` (:data:`V1ALPHA1_ONLY`)."""

    names: tuple[str, ...]


V1_ONLY = Versions(("v1",))
V1ALPHA1_ONLY = Versions(("v1alpha1",))


@dataclass(frozen=True)
class Description:
    """Description text for a type that has no field of its own (list items, map values)."""

    text: str


Int32 = Annotated[int, Schema(format="int32")]
Int64 = Annotated[int, Schema(format="int64")]

# Kubernetes types embedded in the Ray CRDs, kept as plain JSON values.
PodTemplateSpec = Annotated[dict[str, Any], K8s("io.k8s.api.core.v1.PodTemplateSpec")]
ServiceObject = Annotated[dict[str, Any], K8s("io.k8s.api.core.v1.Service")]
EnvVar = Annotated[dict[str, Any], K8s("io.k8s.api.core.v1.EnvVar")]
EnvFromSource = Annotated[dict[str, Any], K8s("io.k8s.api.core.v1.EnvFromSource")]
EnvVarSource = Annotated[dict[str, Any], K8s("io.k8s.api.core.v1.EnvVarSource")]
ResourceRequirements = Annotated[dict[str, Any], K8s("io.k8s.api.core.v1.ResourceRequirements")]
SecurityContext = Annotated[dict[str, Any], K8s("io.k8s.api.core.v1.SecurityContext")]
VolumeMount = Annotated[dict[str, Any], K8s("io.k8s.api.core.v1.VolumeMount")]
IngressTLS = Annotated[dict[str, Any], K8s("io.k8s.api.networking.v1.IngressTLS")]
NetworkPolicyIngressRule = Annotated[dict[str, Any], K8s("io.k8s.api.networking.v1.NetworkPolicyIngressRule")]
NetworkPolicyEgressRule = Annotated[dict[str, Any], K8s("io.k8s.api.networking.v1.NetworkPolicyEgressRule")]
Condition = Annotated[dict[str, Any], K8s("io.k8s.apimachinery.pkg.apis.meta.v1.Condition")]
# Status conditions are a map keyed by type (`+listType=map`, `+listMapKey=type` in KubeRay's types).
ConditionList = Annotated[
    list[Condition], Schema(**{"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ("type",)})
]
# Quantities and times stay in their wire form, so a read-modify-write never reformats them.
Quantity = Annotated[str | int | float, K8s("io.k8s.apimachinery.pkg.api.resource.Quantity")]
Time = Annotated[str, K8s("io.k8s.apimachinery.pkg.apis.meta.v1.Time")]

# managedBy (KubeRay apis/ray/v1/*_types.go): immutable, and only these two controllers may be named.
ManagedBy = Annotated[
    str,
    CEL("self == oldSelf", "the managedBy field is immutable"),
    CEL(
        "self in ['ray.io/kuberay-operator', 'kueue.x-k8s.io/multikueue']",
        "the managedBy field value must be either 'ray.io/kuberay-operator' or 'kueue.x-k8s.io/multikueue'",
    ),
]
