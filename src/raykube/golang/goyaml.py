"""``sigs.k8s.io/yaml`` v1.6.0 as KubeRay reads YAML (a RayJob's ``runtimeEnvYAML``, a RayService's
``serveConfigV2``).

:func:`yaml_to_json` is ``sigs.k8s.io/yaml.YAMLToJSON``: YAML read with go-yaml v2's rules for plain scalars (its
``resolve``: ``y``/``n``/``on``/``off`` are booleans, ``0o17``/``0x1F``/``0b1`` integers, ``1e3`` and ``08`` floats,
timestamps stay strings, no sexagesimal numbers), go-yaml v2's merge keys (``<<`` sets the merged keys where it
stands, over the keys before it), non-string keys turned into strings as that library does (``1``, ``true`` and
``1.0`` stay apart as ``"1"``, ``"true"``), values decoded depth first in document order (the first error is
go-yaml's first), then :func:`~raykube.golang.gojson.json_marshal` with map keys sorted. :func:`yaml_to_value` stops
before the JSON.

Compared with Go's own answers for 3,040 YAML documents in tests/vectors/yaml_to_json.json and, through the RayService
serve-config body, 651 configs in tests/vectors/serve_config.json (tools/govectors, ``make vectors``). Where Python
cannot see what Go sees: the YAML grammar is PyYAML's; only the typing of plain scalars and keys follows go-yaml v2.
Error texts are PyYAML's in go-yaml's ``yaml: line N: ...`` shape, not always go-yaml's words (a list or mapping
as a key: ``found unhashable key``, where go-yaml writes the key in Go syntax).
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Mapping
from typing import Any

import yaml

from raykube.golang.errors import GoError
from raykube.golang.gojson import json_marshal
from raykube.golang.strconv import format_float, parse_int, quote

__all__ = ["go_yaml_resolve", "yaml_to_json", "yaml_to_value"]

_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"
_MERGE = "tag:yaml.org,2002:merge"
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_BINARY = "tag:yaml.org,2002:binary"

# go-yaml v2 resolve.go resolveMapList: the plain scalars it looks up by exact text.
_RESOLVE_MAP: Mapping[str, tuple[str, Any]] = {
    **{text: (_BOOL, True) for text in ("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON")},
    **{text: (_BOOL, False) for text in ("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF")},
    **{text: (_NULL, None) for text in ("", "~", "null", "Null", "NULL")},
    **{text: (_FLOAT, math.nan) for text in (".nan", ".NaN", ".NAN")},
    **{text: (_FLOAT, math.inf) for text in (".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF")},
    **{text: (_FLOAT, -math.inf) for text in ("-.inf", "-.Inf", "-.INF")},
}
_YAML_STYLE_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?\Z")
_DOT_FLOAT = re.compile(r"\.[0-9]+([eE][-+]?[0-9]+)?\Z")  # what strconv.ParseFloat accepts after a leading dot
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def _go_parse_float(text: str) -> float | None:
    """``strconv.ParseFloat(text, 64)`` for decimal texts; None on overflow (Go's ErrRange)."""
    number = float(text)
    return None if math.isinf(number) else number


def go_yaml_resolve(text: str) -> tuple[str, Any]:  # noqa: PLR0911, PLR0912 - go-yaml's cases, in its order
    """go-yaml v2 ``resolve`` of an untagged plain scalar: ``(tag, value)``. Timestamps stay strings (v2 hands their
    text to an ``interface{}``), base 60 numbers are not supported (strings)."""
    if text in _RESOLVE_MAP:
        return _RESOLVE_MAP[text]
    first = text[:1]
    if first == ".":
        if _DOT_FLOAT.match(text):
            number = _go_parse_float(text)
            if number is not None:
                return _FLOAT, number
        return _STR, text
    if first and first in "0123456789+-":
        plain = text.replace("_", "")
        integer = parse_int(plain, 0, signed=True)
        if integer is None:
            integer = parse_int(plain, 0, signed=False)
        if integer is not None:
            return _INT, integer
        if _YAML_STYLE_FLOAT.match(plain):
            number = _go_parse_float(plain)
            if number is not None:
                return _FLOAT, number
        if plain.startswith("0b"):
            integer = parse_int(plain[2:], 2, signed=True)
            if integer is None:
                integer = parse_int(plain[2:], 2, signed=False)
        elif plain.startswith("-0b"):
            integer = parse_int("-" + plain[3:], 2, signed=True)
        if integer is not None:
            return _INT, integer
    return _STR, text


class _GoYamlLoader(yaml.SafeLoader):
    """PyYAML's grammar with go-yaml v2's typing of plain scalars, its merge keys and sigs.k8s.io/yaml's JSON keys."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if kind is yaml.ScalarNode:
            if implicit[0]:
                return _MERGE if value == "<<" else go_yaml_resolve(value)[0]
            return _STR
        return super().resolve(kind, value, implicit)  # type: ignore[no-untyped-call]

    def construct_document(self, node: yaml.Node) -> Any:
        """Depth first, in document order, as go-yaml decodes (so the first error met is go-yaml's first error)."""
        self.deep_construct = True
        return super().construct_document(node)

    def flatten_mapping(self, node: yaml.MappingNode) -> None:
        """go-yaml v2's merge keys: a ``<<`` entry sets the merged keys where it stands, over the keys before it (and
        under the keys after it); of a list of mappings, the first wins. PyYAML lets every explicit key win."""
        pairs: list[tuple[yaml.Node, yaml.Node]] = []
        for key_node, value_node in node.value:
            if key_node.tag != _MERGE:
                pairs.append((key_node, value_node))
                continue
            merged = value_node.value[::-1] if isinstance(value_node, yaml.SequenceNode) else [value_node]
            for mapping in merged:
                if not isinstance(mapping, yaml.MappingNode):
                    raise GoError("yaml: map merge requires map or sequence of maps as the value")
                self.flatten_mapping(mapping)
                pairs.extend(mapping.value)
        node.value = pairs

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        """A mapping with its keys made JSON keys already (Python's ``1 == True == 1.0`` and ``0 == -0.0`` would merge
        keys that Go keeps apart); a key sigs.k8s.io/yaml refuses is kept as it is, for :func:`_jsonable` to refuse."""
        self.flatten_mapping(node)
        mapping: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, Hashable):
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark, "found unhashable key", key_node.start_mark
                )
            text = _key_text(key)
            mapping[key if text is None else text] = self.construct_object(value_node, deep=deep)
        return mapping


def _construct_resolved(loader: _GoYamlLoader, node: yaml.Node) -> Any:
    """A scalar of one of the resolvable tags (explicit or implicit), typed as go-yaml v2 types it."""
    text = loader.construct_scalar(node)  # type: ignore[arg-type]
    tag, value = go_yaml_resolve(str(text))
    if node.tag in (_STR, _TIMESTAMP):
        return str(text)
    if tag == node.tag:
        return value
    if node.tag == _FLOAT and tag == _INT:
        return float(value)
    raise yaml.constructor.ConstructorError(
        None, None, f"cannot decode {_short(tag)} `{text}` as a {_short(node.tag)}", node.start_mark
    )


def _short(tag: str) -> str:
    return "!!" + tag.rpartition(":")[2] if tag.startswith("tag:yaml.org,2002:") else tag


def _construct_binary(loader: _GoYamlLoader, node: yaml.Node) -> str:
    data: bytes = loader.construct_yaml_binary(node)  # type: ignore[arg-type]
    return data.decode("utf-8", errors="replace")


def _construct_other(loader: _GoYamlLoader, suffix: str, node: yaml.Node) -> Any:
    """Any other tag (``!foo``, ``!!set``, ``!!omap``): the node's plain value, as go-yaml v2 decodes into
    ``interface{}``."""
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_scalar(node)  # type: ignore[arg-type]


for _tag in (_INT, _FLOAT, _BOOL, _NULL, _TIMESTAMP):
    _GoYamlLoader.add_constructor(_tag, _construct_resolved)
_GoYamlLoader.add_constructor(_BINARY, _construct_binary)
for _tag in ("tag:yaml.org,2002:set", "tag:yaml.org,2002:omap", "tag:yaml.org,2002:pairs"):
    _GoYamlLoader.add_constructor(_tag, lambda loader, node: _construct_other(loader, "", node))  # type: ignore[arg-type]
_GoYamlLoader.add_multi_constructor("", _construct_other)


def _yaml_error(error: yaml.YAMLError) -> GoError:
    """A YAML syntax error in go-yaml's ``yaml: line N: problem`` shape."""
    if isinstance(error, yaml.constructor.ConstructorError) and str(error.problem).startswith("cannot decode "):
        return GoError(f"yaml: {error.problem}")  # go-yaml's failf, without a line
    if isinstance(error, yaml.MarkedYAMLError) and error.problem_mark is not None:
        return GoError(f"yaml: line {error.problem_mark.line + 1}: {error.problem}")
    return GoError("yaml: " + " ".join(str(error).split()))


def _key_text(key: Any) -> str | None:
    """sigs.k8s.io/yaml ``convertToJSONableObject``: a YAML key as the JSON key it becomes; None if it refuses it."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int) and _INT64_MIN <= key <= _INT64_MAX:
        return str(key)
    if isinstance(key, float):
        text = format_float(key, "g", -1, 32)
        return {"+Inf": ".inf", "-Inf": "-.inf", "NaN": ".nan"}.get(text, text)
    return None


def _json_key(key: Any, value: Any) -> str:
    """:func:`_key_text`, or sigs.k8s.io/yaml's error for a key it refuses."""
    text = _key_text(key)
    if text is not None:
        return text
    kind = "uint64" if isinstance(key, int) else "%!s(<nil>)" if key is None else type(key).__name__
    raise GoError(f"unsupported map key of type: {kind}, key: {_go_value(key)}, value: {_go_value(value)}")


def _go_value(value: Any) -> str:
    """Roughly Go's ``%+#v`` of a decoded YAML value (exact for scalars), for error messages."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return quote(value)
    if isinstance(value, float):
        return format_float(value, "g", -1, 64)
    return repr(value)


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {_json_key(key, item): _jsonable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_jsonable(item) for item in value]
    return value


def yaml_to_value(text: str) -> Any:
    """The first YAML document of ``text`` as go-yaml v2 and sigs.k8s.io/yaml see it (keys made strings): dicts,
    lists, str, bool, None, int, float. Raises :class:`GoError` on a YAML error."""
    try:
        documents = yaml.load_all(text, Loader=_GoYamlLoader)  # a SafeLoader subclass
        first = next(iter(documents), None)
    except yaml.YAMLError as error:
        raise _yaml_error(error) from None
    except RecursionError:
        raise GoError("yaml: exceeded max depth") from None
    except TypeError as error:  # an unhashable (collection) key
        raise GoError(f"unsupported map key: {error}") from None
    return _jsonable(first)


def yaml_to_json(text: str) -> str:
    """``sigs.k8s.io/yaml.YAMLToJSON``: the first document as compact JSON, keys sorted, Go's number formats."""
    return json_marshal(yaml_to_value(text))
