"""The JSON Schema (draft 2020-12) of the ``doctor.raykube.io/v1`` report that :func:`raykube.doctor.render.to_json`
builds; ``docs/doctor.md`` shows and explains it, and a test keeps the two identical. Every other output format
(SARIF, JUnit, HTML, Prometheus: :mod:`raykube.doctor.formats`) is derived from a document that follows it.
"""

from __future__ import annotations

from typing import Any, Final, get_args

from raykube.doctor.model import REPORT_KIND, SCHEMA_VERSION, EvidenceSource

_REF = {
    "type": "object",
    "required": ["kind", "name"],
    "properties": {"kind": {"type": "string"}, "name": {"type": "string"}, "namespace": {"type": "string"}},
    "additionalProperties": False,
}
_SEVERITY = {"enum": ["critical", "error", "warning", "info"]}
_COUNTS = {
    "type": "object",
    "required": ["critical", "error", "warning", "info"],
    "additionalProperties": {"type": "integer", "minimum": 0},
}

# The JSON Schema (draft 2020-12) of the report; docs/doctor.md shows and explains it, a test validates against it.
JSON_SCHEMA: Final[dict[str, Any]] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://raykube.io/schemas/doctor/v1.json",
    "title": "raykube doctor report (doctor.raykube.io/v1)",
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "summary", "environment", "targets", "findings", "notChecked"],
    "additionalProperties": False,
    "properties": {
        "apiVersion": {"const": SCHEMA_VERSION},
        "kind": {"const": REPORT_KIND},
        "metadata": {
            "type": "object",
            "required": ["capturedAt", "source"],
            "properties": {
                "capturedAt": {"type": "string"},
                "source": {"enum": ["live", "dump"]},
                "rules": {"type": "array", "items": {"type": "string", "pattern": "^[A-Z]+[0-9]+$"}},
            },
            "additionalProperties": False,
        },
        "summary": {
            "type": "object",
            "required": ["status", "exitCode", "failOn", "worst", "counts", "clusters", "unhealthyClusters"],
            "properties": {
                "status": {"enum": ["Healthy", "Unhealthy", "Incomplete", "RuleError"]},
                "exitCode": {"enum": [0, 1, 3, 4]},
                "failOn": _SEVERITY,
                "worst": {"oneOf": [_SEVERITY, {"type": "null"}]},
                "counts": _COUNTS,
                "clusters": {"type": "integer", "minimum": 0},
                "unhealthyClusters": {"type": "integer", "minimum": 0},
                "workloads": {"type": "integer", "minimum": 0},
            },
            "additionalProperties": False,
        },
        "environment": {
            "type": "object",
            "required": ["operators", "crdVersions"],
            "properties": {
                "operators": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": [
                            "namespace",
                            "name",
                            "implementation",
                            "ready",
                            "watchNamespaces",
                            "serviceAccount",
                        ],
                        "properties": {
                            "namespace": {"type": "string"},
                            "name": {"type": "string"},
                            "implementation": {"enum": ["raykube", "kuberay"]},
                            "image": {"type": "string"},
                            "ready": {"type": "boolean"},
                            "readyReplicas": {"type": "integer"},
                            "replicas": {"type": "integer"},
                            "watchNamespaces": {"type": "array", "items": {"type": "string"}},
                            "serviceAccount": {"type": "string"},
                        },
                        "additionalProperties": False,
                    },
                },
                "crdVersions": {"type": "array", "items": {"type": "string"}},
                "inPodChecks": {"type": "string"},
            },
            "additionalProperties": False,
        },
        "targets": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["kind", "name", "namespace", "status", "worst", "counts", "rootCauses"],
                "properties": {
                    **_REF["properties"],  # type: ignore[dict-item]
                    "status": {"enum": ["Healthy", "Degraded", "Unhealthy"]},
                    "worst": {"oneOf": [_SEVERITY, {"type": "null"}]},
                    "counts": _COUNTS,
                    "rootCauses": {"type": "array", "items": {"type": "string"}},
                },
                "additionalProperties": False,
            },
        },
        "missingTargets": {"type": "array", "items": _REF},
        "findings": {
            "type": "array",
            "items": {
                "type": "object",
                "required": [
                    "id",
                    "rule",
                    "code",
                    "severity",
                    "confidence",
                    "title",
                    "object",
                    "evidence",
                    "explanation",
                    "remediation",
                    "refs",
                    "causedBy",
                    "causes",
                ],
                "properties": {
                    "id": {"type": "string", "pattern": "^[A-Z]+[0-9]+-[0-9]+$"},
                    "rule": {"type": "string", "pattern": "^[A-Z]+[0-9]+$"},
                    "code": {"type": "string", "pattern": "^[A-Z0-9_]+$"},
                    "severity": _SEVERITY,
                    "confidence": {"enum": ["confirmed", "likely", "possible"]},
                    "title": {"type": "string"},
                    "object": _REF,
                    "cluster": _REF,
                    "evidence": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["source"],
                            "properties": {
                                "source": {"enum": list(get_args(EvidenceSource))},
                                "object": _REF,
                                "path": {"type": "string"},
                                "value": {},
                                "reason": {"type": "string"},
                                "message": {"type": "string"},
                                "count": {"type": "integer"},
                                "lastSeen": {"type": "string"},
                                "age": {"type": "string"},
                            },
                            "additionalProperties": False,
                        },
                    },
                    "explanation": {"type": "string"},
                    "remediation": {"type": "array", "items": {"type": "string"}},
                    "refs": {"type": "array", "items": {"type": "string"}},
                    "causedBy": {"type": "array", "items": {"type": "string"}},
                    "causes": {"type": "array", "items": {"type": "string"}},
                },
                "additionalProperties": False,
            },
        },
        "notChecked": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["what", "reason"],
                "properties": {"what": {"type": "string"}, "reason": {"type": "string"}},
                "additionalProperties": False,
            },
        },
        "ruleErrors": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["rule", "error"],
                "properties": {"rule": {"type": "string"}, "error": {"type": "string"}},
                "additionalProperties": False,
            },
        },
        "ignored": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id", "rule", "code", "severity", "title", "object", "reason"],
                "properties": {
                    "id": {"type": "string"},
                    "rule": {"type": "string"},
                    "code": {"type": "string"},
                    "severity": _SEVERITY,
                    "title": {"type": "string"},
                    "object": _REF,
                    "cluster": _REF,
                    "reason": {"type": "string"},
                },
                "additionalProperties": False,
            },
        },
    },
}
