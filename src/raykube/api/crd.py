"""CRD generation: the ray.io CustomResourceDefinitions from this package's own models.

``generate(kind, definitions)`` walks the pydantic models of a kind (``raykube.api.resources``) and writes a
structural OpenAPI v3 schema:

* Python types map to OpenAPI types (``str`` string, ``int`` integer, ``float`` number, ``bool`` boolean,
  ``Literal`` an enum of strings, ``list`` array, ``dict[str, X]`` a map, a model an object); ``X | None`` is an
  optional ``X``.
* A field's description, Python default (unless ``None``), ``Schema``/``CEL``/``CrdRequired`` annotations and
  ``annotated_types`` bounds (``ge``, ``le``, ``max_length``) become ``description``, ``default``, extra keywords,
  ``x-kubernetes-validations`` and ``required``.
* A field annotated with :class:`~raykube.api.schema.K8s` gets the named definition from the pinned Kubernetes OpenAPI
  (``raykube.api.k8s_openapi``), inlined, because CRD schemas cannot use ``$ref``. The inlining makes it look like
  what KubeRay's controller-gen emits: descriptions, enums and patch-strategy hints dropped (the API server checks
  those values when the Pod or Service is created, and the CRDs must stay far below the 1.5 MB object limit), the
  zero-value ``{}`` defaults of nested structs dropped (they would add empty objects to every stored resource),
  ``IntOrString`` and ``Quantity`` as ``x-kubernetes-int-or-string``, and an embedded ``ObjectMeta`` reduced to name,
  namespace, labels, annotations and finalizers.

The output is deterministic (sorted keys), so ``config/crd/`` can be checked in and a test can prove it current.
"""

from __future__ import annotations

import copy
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types
import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from raykube.api.k8s_openapi import KUBERNETES_VERSION
from raykube.api.resources import GROUP, KINDS, Kind
from raykube.api.schema import CEL, CrdRequired, K8s, Schema

# The Quantity grammar of k8s.io/apimachinery/pkg/api/resource, as every CRD generator writes it.
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
_INT_OR_STRING: dict[str, Any] = {
    "anyOf": [{"type": "integer"}, {"type": "string"}],
    "x-kubernetes-int-or-string": True,
}
_SPECIAL: dict[str, dict[str, Any]] = {
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {**_INT_OR_STRING, "pattern": QUANTITY_PATTERN},
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": _INT_OR_STRING,
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time": {"type": "string", "format": "date-time"},
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": {"type": "string", "format": "date-time"},
    "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {
        "type": "object",
        "properties": {
            "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
            "finalizers": {"type": "array", "items": {"type": "string"}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "name": {"type": "string"},
            "namespace": {"type": "string"},
        },
    },
}
# OpenAPI keywords of the Kubernetes definitions that a CRD keeps; everything else is dropped.
_KEPT = {
    "type",
    "format",
    "properties",
    "items",
    "additionalProperties",
    "required",
    "default",
    "pattern",
    "minimum",
    "maximum",
    "maxLength",
    "minLength",
    "maxItems",
    "minItems",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "x-kubernetes-int-or-string",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
}
_REF_PREFIX = "#/components/schemas/"
_SCALARS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


class SchemaError(TypeError):
    """A model field has a type the CRD generator cannot express."""


class _K8sInliner:
    """Inlines named Kubernetes OpenAPI definitions into CRD form, caching each definition once."""

    def __init__(self, definitions: Mapping[str, Any]) -> None:
        self.definitions = definitions
        self.cache: dict[str, dict[str, Any]] = {}

    def definition(self, name: str) -> dict[str, Any]:
        if name in _SPECIAL:
            return dict(_SPECIAL[name])
        if name not in self.cache:
            if name not in self.definitions:
                raise SchemaError(f"{name} is not in the Kubernetes v{KUBERNETES_VERSION} OpenAPI definitions")
            self.cache[name] = self.convert(self.definitions[name])
        return dict(self.cache[name])

    def convert(self, node: Mapping[str, Any], required: bool = False) -> dict[str, Any]:
        """One OpenAPI node in CRD form; ``required`` says whether its parent lists it as required."""
        if "$ref" in node:
            return self.definition(node["$ref"].removeprefix(_REF_PREFIX))
        base: dict[str, Any] = {}
        if "allOf" in node:  # openapi-gen wraps a $ref to attach a default or description
            [only] = node["allOf"]
            base = self.convert(only)
        out = dict(base)
        for key, value in node.items():
            if key not in _KEPT:
                continue
            if key == "properties":
                needed = set(node.get("required", ()))
                out[key] = {name: self.convert(child, name in needed) for name, child in value.items()}
            elif key in ("items", "additionalProperties") and isinstance(value, Mapping):
                out[key] = self.convert(value, required=True)  # an element cannot be "absent"
            elif key == "default" and (value == {} or (required and value in ("", 0, False))):
                # Zero values openapi-gen fills in for structs and for required scalars: nobody declared them, and
                # a default on a required field would make the API server accept the field missing.
                continue
            else:
                out[key] = value
        return out


def _markers(info: FieldInfo) -> list[Any]:
    """A field's annotations, including those on the ``X`` of an ``Annotated[X, ...] | None``."""
    found = list(info.metadata)
    for option in get_args(info.annotation) if get_origin(info.annotation) in (Union, types.UnionType) else ():
        if get_origin(option) is Annotated:
            found += get_args(option)[1:]
    return found


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


class _Generator:
    def __init__(self, definitions: Mapping[str, Any]) -> None:
        self.k8s = _K8sInliner(definitions)

    def model(self, model: type[BaseModel]) -> dict[str, Any]:
        properties: dict[str, Any] = {}
        required: list[str] = []
        for name, info in model.model_fields.items():
            key = info.alias or name
            properties[key] = self.field(info)
            if info.is_required() or any(isinstance(m, CrdRequired) for m in _markers(info)):
                required.append(key)
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            schema["required"] = sorted(required)
        return schema

    def field(self, info: FieldInfo) -> dict[str, Any]:
        schema = self.annotation(info.annotation, list(info.metadata))
        if info.description:
            schema["description"] = info.description
        if info.default not in (None, PydanticUndefined) and info.default_factory is None:
            schema["default"] = info.default
        return schema

    def annotation(self, tp: Any, metadata: list[Any]) -> dict[str, Any]:  # noqa: PLR0911 - a type dispatch
        origin = get_origin(tp)
        if origin is Annotated:
            base, *extra = get_args(tp)
            return self.annotation(base, [*extra, *metadata])
        if origin in (Union, types.UnionType):
            options = [a for a in get_args(tp) if a is not type(None)]
            k8s = [m for m in metadata if isinstance(m, K8s)]
            if len(options) == 1:
                return self.annotation(options[0], metadata)
            if k8s:  # e.g. Quantity = str | int | float, described by its Kubernetes definition
                return self.constrained(self.k8s.definition(k8s[0].definition), metadata)
            raise SchemaError(f"cannot express the union {tp} in a CRD")
        k8s = [m for m in metadata if isinstance(m, K8s)]
        if k8s:
            return self.constrained(self.k8s.definition(k8s[0].definition), metadata)
        if origin is Literal:
            values = list(get_args(tp))
            return self.constrained({"type": "string", "enum": values}, metadata)
        if origin is list:
            [item] = get_args(tp)
            return self.constrained({"type": "array", "items": self.annotation(item, [])}, metadata)
        if origin is dict:
            key, value = get_args(tp)
            if key is not str:
                raise SchemaError(f"map keys must be strings, not {key}")
            if value is typing.Any:
                raise SchemaError("a map of Any needs a K8s or Schema annotation")
            return self.constrained({"type": "object", "additionalProperties": self.annotation(value, [])}, metadata)
        if _is_model(tp):
            return self.constrained(self.model(tp), metadata)
        if tp in _SCALARS:
            return self.constrained({"type": _SCALARS[tp]}, metadata)
        raise SchemaError(f"cannot express {tp!r} in a CRD")

    @staticmethod
    def constrained(schema: dict[str, Any], metadata: list[Any]) -> dict[str, Any]:
        rules: list[dict[str, str]] = []
        for item in metadata:
            if isinstance(item, Schema):
                schema.update({k: list(v) if isinstance(v, tuple) else v for k, v in item.keywords.items()})
            elif isinstance(item, CEL):
                rules.append({"message": item.message, "rule": item.rule})
            elif isinstance(item, annotated_types.Ge):
                schema["minimum"] = item.ge
            elif isinstance(item, annotated_types.Le):
                schema["maximum"] = item.le
            elif isinstance(item, annotated_types.MaxLen):
                schema["maxLength"] = item.max_length
        if rules:
            schema["x-kubernetes-validations"] = rules
        return schema


def openapi_schema(kind: Kind, definitions: Mapping[str, Any]) -> dict[str, Any]:
    """The ``openAPIV3Schema`` of ``kind``."""
    generator = _Generator(definitions)
    fields = kind.model.model_fields
    properties: dict[str, Any] = {
        "apiVersion": {
            "type": "string",
            "description": "The versioned schema of this object: ray.io/v1.",
        },
        "kind": {"type": "string", "description": f"{kind.name}."},
        "metadata": {"type": "object"},
        "spec": generator.field(fields["spec"]),
        "status": generator.field(fields["status"]),
    }
    return {"type": "object", "description": kind.description, "properties": properties}


def _relaxed(schema: dict[str, Any], optional: tuple[str, ...]) -> dict[str, Any]:
    """A copy of ``schema`` in which each dotted path of ``optional`` is no longer required."""
    if not optional:
        return schema
    relaxed = copy.deepcopy(schema)
    for path in optional:
        *parents, name = path.split(".")
        node = relaxed
        for part in parents:
            node = node["properties"][part]
        node["required"] = [r for r in node.get("required", []) if r != name]
        if not node["required"]:
            del node["required"]
    return relaxed


def generate(kind: Kind, definitions: Mapping[str, Any]) -> dict[str, Any]:
    """The CustomResourceDefinition of ``kind``: ``v1`` served and stored, ``v1alpha1`` served where KubeRay does."""
    schema = {"openAPIV3Schema": openapi_schema(kind, definitions)}
    columns = [c.to_crd() for c in kind.columns]
    versions: list[dict[str, Any]] = [
        {
            "name": "v1",
            "served": True,
            "storage": True,
            "schema": schema,
            "subresources": {"status": {}},
            "additionalPrinterColumns": columns,
        }
    ]
    if kind.served_v1alpha1:
        alpha: dict[str, Any] = {
            "name": "v1alpha1",
            "served": True,
            "storage": False,
            "schema": {"openAPIV3Schema": _relaxed(schema["openAPIV3Schema"], kind.v1alpha1_optional)},
            "subresources": {"status": {}},
        }
        if kind.v1alpha1_columns:
            alpha["additionalPrinterColumns"] = columns
        versions.append(alpha)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": kind.crd_name,
            "annotations": {
                "raykube.io/generated-by": "raykube crd generate",
                "raykube.io/kubernetes-openapi": f"v{KUBERNETES_VERSION}",
            },
        },
        "spec": {
            "group": GROUP,
            "names": {
                "categories": ["all"],
                "kind": kind.name,
                "listKind": kind.list_kind,
                "plural": kind.plural,
                "singular": kind.singular,
            },
            "scope": "Namespaced",
            "versions": versions,
        },
    }


def generate_all(definitions: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Every ray.io CRD, by file name (``rayclusters.yaml``)."""
    return {f"{kind.plural}.yaml": generate(kind, definitions) for kind in KINDS}


HEADER = "# Generated by `raykube crd generate` from raykube.api and the Kubernetes v{version} OpenAPI. Do not edit.\n"


# libyaml is ten times faster on these megabyte-sized documents; PyYAML's wheels include it.
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _NoAliasDumper(_Dumper):  # type: ignore[misc,valid-type]
    """Writes shared sub-trees (v1 and v1alpha1 share a schema) in full instead of as YAML anchors."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def render(crd: Mapping[str, Any]) -> str:
    """The YAML text of one CRD, exactly as checked in under ``config/crd/``."""
    body = yaml.dump(dict(crd), Dumper=_NoAliasDumper, sort_keys=True, width=120)
    return HEADER.format(version=KUBERNETES_VERSION) + body


def generated_dir() -> Path:
    """Where the generated CRDs are: packaged with raykube, or ``config/crd/`` of a source checkout."""
    packaged = Path(__file__).with_name("crds")
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[3] / "config" / "crd"


def load_generated() -> dict[str, dict[str, Any]]:
    """The checked-in CRDs, by file name, in :data:`KINDS` order."""
    directory = generated_dir()
    crds: dict[str, dict[str, Any]] = {}
    for kind in KINDS:
        path = directory / f"{kind.plural}.yaml"
        try:
            crds[path.name] = yaml.load(path.read_text(), Loader=_Loader)  # noqa: S506 - a safe loader
        except FileNotFoundError as exc:
            raise FileNotFoundError(f"{path} is missing; run `raykube crd generate`") from exc
    return crds
