"""The operator Deployments (raykube's chart or KubeRay's ``helm-chart/kuberay-operator`` and
``ray-operator/config/default``), found by name or labels, with their readiness and the flags KubeRay's
``ray-operator/main.go`` defines (watched namespaces, feature gates, leader election); docs/doctor.md, "The
operator's permissions"."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from typing import Any, Final

from raykube.api import constants as c
from raykube.doctor import snapshot as s
from raykube.doctor.facts.objects import terminating
from raykube.doctor.facts.pods import is_ready, ray_container
from raykube.doctor.model import OperatorInfo
from raykube.doctor.snapshot import Obj, Snapshot

# Kubernetes recommended label: the component of an application (KubeRay's operator Pods carry kuberay-operator).
COMPONENT_LABEL: Final = "app.kubernetes.io/component"


def _flag(args: Sequence[str], flag: str) -> str | None:
    """The value of ``--flag=value`` or ``--flag value`` in an argv (the last one wins, as Go's flag package)."""
    found = None
    for index, arg in enumerate(args):
        if arg == flag and index + 1 < len(args):
            found = args[index + 1]
        elif arg.startswith(flag + "="):
            found = arg[len(flag) + 1 :]
    return found


def _argv(container: Mapping[str, Any]) -> list[str]:
    argv = [str(a) for a in (container.get("command") or []) + (container.get("args") or [])]
    # `sh -c "manager --watch-namespace=a"`: split shell strings too, so the flags are found either way.
    out: list[str] = []
    for arg in argv:
        if " " in arg and "--" in arg:
            try:
                out.extend(shlex.split(arg))
            except ValueError:
                out.append(arg)
        else:
            out.append(arg)
    return out


def _feature_gates(text: str | None) -> dict[str, bool]:
    gates: dict[str, bool] = {}
    for item in (text or "").split(","):
        name, _, value = item.partition("=")
        if name.strip():
            gates[name.strip()] = value.strip().lower() in ("true", "1", "t")
    return gates


def is_operator_deployment(deployment: Mapping[str, Any]) -> bool:
    """An operator Deployment: by name, or by the labels of raykube's and KubeRay's charts and kustomize install
    (``app.kubernetes.io/name=kuberay-operator``, or ``app.kubernetes.io/component=kuberay-operator``)."""
    template_meta = ((deployment.get("spec") or {}).get("template") or {}).get("metadata") or {}
    labels = {**(template_meta.get("labels") or {}), **s.labels_of(deployment)}
    return (
        s.name_of(deployment) == c.OPERATOR_DEPLOYMENT_NAME
        or labels.get(c.K8S_APP_NAME_LABEL) == c.OPERATOR_APP_NAME_LABEL_VALUES[0]
        or labels.get(COMPONENT_LABEL) == c.COMPONENT_NAME
    )


def selector_matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    match = selector.get("matchLabels") or {}
    if any(labels.get(k) != v for k, v in match.items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        key, op, values = expression.get("key"), expression.get("operator"), expression.get("values") or []
        present = key in labels
        if (
            (op == "In" and labels.get(key) not in values)
            or (op == "NotIn" and present and labels.get(key) in values)
            or (op == "Exists" and not present)
            or (op == "DoesNotExist" and present)
        ):
            return False
    return True


def operators(snap: Snapshot) -> list[OperatorInfo]:
    found: list[OperatorInfo] = []
    for deployment in snap.all(s.DEPLOYMENTS):
        if not is_operator_deployment(deployment):
            continue
        spec = deployment.get("spec") or {}
        template = (spec.get("template") or {}).get("spec") or {}
        container = ray_container(template)
        argv = _argv(container)
        watch = _flag(argv, c.OPERATOR_WATCH_NAMESPACE_FLAG) or ""
        leader = _flag(argv, c.OPERATOR_ENABLE_LEADER_ELECTION_FLAG)
        namespace = s.namespace_of(deployment)
        status = deployment.get("status") or {}
        selector = spec.get("selector") or {}
        pods = [
            p
            for p in snap.in_namespace(s.PODS, namespace)
            if selector_matches(selector, s.labels_of(p)) and not terminating(p)
        ]
        ready_pods = sum(1 for p in pods if is_ready(p))
        ready_replicas = ready_pods if pods else int(status.get("readyReplicas") or 0)
        image = str(container.get("image") or "")
        implementation = "raykube" if ("raykube" in image or (argv[:1] == ["raykube"])) else "kuberay"
        found.append(
            OperatorInfo(
                namespace=namespace,
                name=s.name_of(deployment),
                implementation=implementation,
                image=image,
                ready=ready_replicas > 0,
                ready_replicas=ready_replicas,
                replicas=int(spec.get("replicas") or 0) if "replicas" in spec else 1,
                watch_namespaces=tuple(n.strip() for n in watch.split(",") if n.strip()),
                service_account=str(template.get("serviceAccountName") or template.get("serviceAccount") or "default"),
                feature_gates=_feature_gates(_flag(argv, c.OPERATOR_FEATURE_GATES_FLAG)),
                leader_election=(leader or str(c.OPERATOR_LEADER_ELECTION_DEFAULT)).lower() in ("true", "1", "t"),
                leader_election_namespace=_flag(argv, c.OPERATOR_LEADER_ELECTION_NAMESPACE_FLAG) or namespace,
            )
        )
    return sorted(found, key=lambda o: (o.namespace, o.name))


def operator_pods(snap: Snapshot, operator: OperatorInfo) -> list[Obj]:
    deployment = snap.get(s.DEPLOYMENTS, operator.namespace, operator.name) or {}
    selector = (deployment.get("spec") or {}).get("selector") or {}
    return [p for p in snap.in_namespace(s.PODS, operator.namespace) if selector_matches(selector, s.labels_of(p))]
