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

from raykube.api.constants import V1ALPHA1_DEPRECATION_WARNING as V1ALPHA1_DEPRECATION
from raykube.api.k8s_openapi import KUBERNETES_VERSION
from raykube.api.resources import GROUP, KINDS, Kind
from raykube.api.schema import CEL, CrdRequired, K8s, Schema, Versions

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
# Where KubeRay's generator (controller-gen, reading the Go markers of k8s.io/api and k8s.io/apimachinery) writes a
# Kubernetes type differently from the OpenAPI document (openapi-gen) we inline: per definition, keywords set on the
# definition itself ("self"), keywords set on or removed from ("-") a property, and the definition's required list.
_QUALIFIED_NAME = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
_ATOMIC = {"self": {"x-kubernetes-map-type": "atomic"}}
_CONTROLLER_GEN: dict[str, dict[str, Any]] = {
    # k8s.io/api core/v1 types.go: these structs carry +structType=atomic, which the OpenAPI does not repeat.
    "io.k8s.api.core.v1.ConfigMapEnvSource": _ATOMIC,
    "io.k8s.api.core.v1.SecretEnvSource": _ATOMIC,
    "io.k8s.api.core.v1.ConfigMapVolumeSource": _ATOMIC,
    "io.k8s.api.core.v1.ConfigMapProjection": _ATOMIC,
    "io.k8s.api.core.v1.SecretProjection": _ATOMIC,
    # openapi-gen declares +default values that controller-gen does not emit.
    "io.k8s.api.core.v1.AzureDiskVolumeSource": {"cachingMode": {"-": ("default",)}, "kind": {"-": ("default",)}},
    # k8s.io/api core/v1 PortStatus: error is +required with a qualified-name pattern (+kubebuilder markers).
    "io.k8s.api.core.v1.PortStatus": {
        "error": {"maxLength": 316, "pattern": _QUALIFIED_NAME},
        "required": ["error", "port", "protocol"],
    },
    # k8s.io/apimachinery meta/v1 Condition: the +kubebuilder:validation markers on each field.
    "io.k8s.apimachinery.pkg.apis.meta.v1.Condition": {
        "type": {"maxLength": 316, "pattern": _QUALIFIED_NAME},
        "status": {"enum": ["True", "False", "Unknown"]},
        "observedGeneration": {"minimum": 0},
        "reason": {"maxLength": 1024, "minLength": 1, "pattern": r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"},
        "message": {"maxLength": 32768},
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
            self.cache[name] = _as_controller_gen_writes(name, self.convert(self.definitions[name]))
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


def _as_controller_gen_writes(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` (definition ``name``) with the :data:`_CONTROLLER_GEN` corrections applied."""
    for key, change in _CONTROLLER_GEN.get(name, {}).items():
        if key == "self":
            schema.update(change)
        elif key == "required":
            schema["required"] = list(change)
        else:
            prop = schema["properties"][key] = dict(schema["properties"][key])
            for dropped in change.get("-", ()):
                prop.pop(dropped, None)
            prop.update({k: v for k, v in change.items() if k != "-"})
    return schema


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
    """Writes the schema of one CRD version (``v1`` or ``v1alpha1``): fields marked for other versions are left out."""

    def __init__(self, k8s: _K8sInliner, version: str) -> None:
        self.k8s = k8s
        self.version = version

    def _in_version(self, info: FieldInfo) -> bool:
        return all(self.version in m.names for m in _markers(info) if isinstance(m, Versions))

    def _required(self, info: FieldInfo) -> bool:
        marks = [m for m in _markers(info) if isinstance(m, CrdRequired)]
        return info.is_required() or any(not m.versions or self.version in m.versions for m in marks)

    def model(self, model: type[BaseModel]) -> dict[str, Any]:
        properties: dict[str, Any] = {}
        required: list[str] = []
        for name, info in model.model_fields.items():
            if not self._in_version(info):
                continue
            key = info.alias or name
            properties[key] = self.field(info)
            if self._required(info):
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


def openapi_schema(kind: Kind, definitions: Mapping[str, Any], version: str = "v1") -> dict[str, Any]:
    """The ``openAPIV3Schema`` of ``kind`` in CRD version ``version``."""
    return _openapi_schema(kind, _K8sInliner(definitions), version)


def _openapi_schema(kind: Kind, k8s: _K8sInliner, version: str) -> dict[str, Any]:
    generator = _Generator(k8s, version)
    fields = kind.model.model_fields
    properties: dict[str, Any] = {
        "apiVersion": {
            "type": "string",
            "description": f"The versioned schema of this object: ray.io/{version}.",
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
    """The CustomResourceDefinition of ``kind``: ``v1`` served and stored, ``v1alpha1`` served (deprecated) where
    KubeRay does."""
    k8s = _K8sInliner(definitions)
    schema = {"openAPIV3Schema": _openapi_schema(kind, k8s, "v1")}
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
            "deprecated": True,
            "deprecationWarning": V1ALPHA1_DEPRECATION.format(kind=kind.name),
            "schema": {"openAPIV3Schema": _relaxed(_openapi_schema(kind, k8s, "v1alpha1"), kind.v1alpha1_optional)},
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


# --- Fingerprints: comparing the generated CRDs with KubeRay's without keeping a copy of KubeRay's -----------------

FINGERPRINT_DEPTH = 4  # schema paths are fingerprinted down to this many property names below spec/status


def normalized(node: Any) -> Any:
    """``node`` without descriptions and with ``required`` sorted: what the API server's validation depends on."""
    if isinstance(node, Mapping):
        return {k: sorted(v) if k == "required" else normalized(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [normalized(item) for item in node]
    return node


def _digest(node: Any) -> str:
    import hashlib  # noqa: PLC0415 - only the fingerprints need it
    import json  # noqa: PLC0415

    return hashlib.sha256(json.dumps(normalized(node), sort_keys=True).encode()).hexdigest()[:16]


def _schema_paths(node: Mapping[str, Any], path: str, depth: int, out: dict[str, str]) -> None:
    out[path] = _digest(node)
    if depth == 0:
        return
    for name, child in node.get("properties", {}).items():
        _schema_paths(child, f"{path}{name}" if path.endswith(":") else f"{path}.{name}", depth - 1, out)
    if isinstance(node.get("items"), Mapping):
        _schema_paths(node["items"], f"{path}[]", depth, out)
    if isinstance(node.get("additionalProperties"), Mapping):
        _schema_paths(node["additionalProperties"], f"{path}{{}}", depth, out)


def fingerprints(crd: Mapping[str, Any], depth: int = FINGERPRINT_DEPTH) -> dict[str, str]:
    """Digests of a CRD's parts, by path: the names and scope, each version's flags and columns, and its schema down
    to ``depth`` property names (``v1:spec.headGroupSpec.template``). Two CRDs the API server treats alike have the
    same fingerprints; where they differ, the deepest differing paths say where."""
    spec = crd["spec"]
    out = {"group": _digest(spec["group"]), "names": _digest(spec["names"]), "scope": _digest(spec["scope"])}
    for version in spec["versions"]:
        name = version["name"]
        out[f"{name}#version"] = _digest({k: v for k, v in version.items() if k != "schema"})
        _schema_paths(version["schema"]["openAPIV3Schema"], f"{name}:", depth + 1, out)
    return out
