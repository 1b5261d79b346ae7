"""The results of the SubjectAccessReviews the doctor made for the operator's ServiceAccount (one per permission in
:data:`raykube.doctor.access.OPERATOR_ACCESS`; docs/doctor.md, "The operator's permissions")."""

from __future__ import annotations

from dataclasses import dataclass

from raykube.doctor import snapshot as s
from raykube.doctor.snapshot import Snapshot


def service_account_user(namespace: str, name: str) -> str:
    return f"system:serviceaccount:{namespace}:{name}"


@dataclass(frozen=True)
class AccessResult:
    user: str
    namespace: str  # "" for cluster scope
    verb: str
    group: str
    resource: str
    subresource: str
    allowed: bool
    reason: str

    @property
    def resource_text(self) -> str:
        name = f"{self.resource}/{self.subresource}" if self.subresource else self.resource
        return f"{name}.{self.group}" if self.group else name

    @property
    def scope_text(self) -> str:
        return f'in the namespace "{self.namespace}"' if self.namespace else "at the cluster scope"


def access(snap: Snapshot) -> list[AccessResult]:
    out = []
    for review in snap.all(s.ACCESS_REVIEWS):
        spec = review.get("spec") or {}
        attributes = spec.get("resourceAttributes") or {}
        status = review.get("status") or {}
        out.append(
            AccessResult(
                user=str(spec.get("user") or ""),
                namespace=str(attributes.get("namespace") or ""),
                verb=str(attributes.get("verb") or ""),
                group=str(attributes.get("group") or ""),
                resource=str(attributes.get("resource") or ""),
                subresource=str(attributes.get("subresource") or ""),
                allowed=bool(status.get("allowed")),
                reason=str(status.get("reason") or status.get("evaluationError") or ""),
            )
        )
    return out
