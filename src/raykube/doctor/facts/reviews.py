"""The results of the SubjectAccessReviews the doctor made: for the operator's ServiceAccount (one per permission in
:data:`raykube.doctor.access.OPERATOR_ACCESS`; docs/doctor.md, "The operator's permissions"), and for each request a
RayJob's output says the API server refused (:func:`refusals`: a Ray task calling the Kubernetes API with its Pod's
ServiceAccount token), to tell whether it is refused still."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

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


# The API server's Forbidden message (k8s.io/apiserver's forbidden responses, as a client prints them):
#   pods is forbidden: User "system:serviceaccount:ns:sa" cannot list resource "pods" in API group "" in the
#   namespace "ns"   (or: at the cluster scope; a named object: pods "x" is forbidden: ...)
FORBIDDEN: Final = re.compile(
    r'is forbidden: User "(?P<user>[^"]+)" cannot (?P<verb>[a-z]+) resource "(?P<resource>[^"]+)"'
    r'(?: in API group "(?P<group>[^"]*)")?'
    r'(?: in the namespace "(?P<namespace>[^"]+)"| (?P<cluster>at the cluster scope))?'
)


@dataclass(frozen=True)
class Refusal:
    """One request the API server refused, as its Forbidden message says: who, what, where."""

    user: str
    verb: str
    group: str
    resource: str
    subresource: str
    namespace: str  # "" at the cluster scope
    line: str  # the message, as quoted

    @property
    def service_account(self) -> tuple[str, str] | None:
        """``(namespace, name)`` when the user is a ServiceAccount (the Ray Pods' token)."""
        parts = self.user.split(":")
        if len(parts) == 4 and parts[:2] == ["system", "serviceaccount"]:
            return parts[2], parts[3]
        return None

    @property
    def resource_text(self) -> str:
        name = f"{self.resource}/{self.subresource}" if self.subresource else self.resource
        return f"{name}.{self.group}" if self.group else name


def refusals(text: str) -> list[Refusal]:
    """Every distinct Forbidden message in ``text`` (a RayJob's status.message, a job's log), in order."""
    found: dict[tuple[str, ...], Refusal] = {}
    for line in text.splitlines():
        for m in FORBIDDEN.finditer(line):
            resource, _, sub = m["resource"].partition("/")
            start = max(0, line.rfind(" ", 0, max(0, m.start() - 40)) + 1)
            refusal = Refusal(
                m["user"], m["verb"], m["group"] or "", resource, sub, m["namespace"] or "", line[start : m.end()][:400]
            )
            key = (refusal.user, refusal.verb, refusal.group, refusal.resource, refusal.subresource, refusal.namespace)
            found.setdefault(key, refusal)
    return list(found.values())
