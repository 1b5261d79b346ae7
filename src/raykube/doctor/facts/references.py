"""What a Pod spec references: its PersistentVolumeClaims (volume and claim names) and every ConfigMap and Secret it
needs (env ``valueFrom``, ``envFrom``, ``configMap``/``secret``/``projected`` volumes), each with the field path that
names it, so the storage and config rules (docs/doctor.md, "Rules") can point at it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from raykube.doctor.facts.pods import containers


def claim_names(spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(volume name, claim name) of every PVC volume of a Pod spec."""
    out = []
    for volume in spec.get("volumes") or []:
        claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
        if claim:
            out.append((str(volume.get("name") or ""), str(claim)))
    return out


@dataclass(frozen=True)
class ConfigRef:
    """A reference from a Pod spec to a ConfigMap or Secret (and maybe one key of it)."""

    kind: str  # ConfigMap | Secret
    name: str
    key: str | None
    optional: bool
    path: str  # spec.containers[0].envFrom[1].secretRef


def config_refs(spec: Mapping[str, Any]) -> list[ConfigRef]:  # noqa: PLR0912 - one branch per kind of reference
    """Every ConfigMap and Secret a Pod spec needs: env valueFrom, envFrom, volumes (configMap, secret, projected)
    and imagePullSecrets (those are optional to the kubelet, which only warns)."""
    out: list[ConfigRef] = []
    for path, container in containers(spec):
        for index, env in enumerate(container.get("env") or []):
            source = env.get("valueFrom") or {}
            for field_name, kind in (("configMapKeyRef", "ConfigMap"), ("secretKeyRef", "Secret")):
                selector = source.get(field_name)
                if isinstance(selector, Mapping) and selector.get("name"):
                    out.append(
                        ConfigRef(
                            kind,
                            str(selector["name"]),
                            str(selector.get("key")) if selector.get("key") is not None else None,
                            bool(selector.get("optional")),
                            f"{path}.env[{index}].valueFrom.{field_name}",
                        )
                    )
        for index, env_from in enumerate(container.get("envFrom") or []):
            for field_name, kind in (("configMapRef", "ConfigMap"), ("secretRef", "Secret")):
                selector = env_from.get(field_name)
                if isinstance(selector, Mapping) and selector.get("name"):
                    out.append(
                        ConfigRef(
                            kind,
                            str(selector["name"]),
                            None,
                            bool(selector.get("optional")),
                            f"{path}.envFrom[{index}].{field_name}",
                        )
                    )
    for index, volume in enumerate(spec.get("volumes") or []):
        base = f"spec.volumes[{index}]"
        config_map = volume.get("configMap")
        if isinstance(config_map, Mapping) and config_map.get("name"):
            out.extend(_volume_refs("ConfigMap", config_map, str(config_map["name"]), f"{base}.configMap"))
        secret = volume.get("secret")
        if isinstance(secret, Mapping) and secret.get("secretName"):
            out.extend(_volume_refs("Secret", secret, str(secret["secretName"]), f"{base}.secret"))
        for source_index, source in enumerate((volume.get("projected") or {}).get("sources") or []):
            for field_name, kind in (("configMap", "ConfigMap"), ("secret", "Secret")):
                selector = source.get(field_name)
                if isinstance(selector, Mapping) and selector.get("name"):
                    path = f"{base}.projected.sources[{source_index}].{field_name}"
                    out.extend(_volume_refs(kind, selector, str(selector["name"]), path))
    return out


def _volume_refs(kind: str, source: Mapping[str, Any], name: str, path: str) -> list[ConfigRef]:
    optional = bool(source.get("optional"))
    items = source.get("items") or []
    if not items:
        return [ConfigRef(kind, name, None, optional, path)]
    return [ConfigRef(kind, name, str(item.get("key")), optional, f"{path}.items[{i}]") for i, item in enumerate(items)]
