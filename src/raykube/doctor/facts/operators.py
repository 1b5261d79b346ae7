"""The operator Deployments (raykube's chart or KubeRay's ``helm-chart/kuberay-operator`` and
``ray-operator/config/default``), found by name or labels, with their readiness and the flags KubeRay's
``ray-operator/main.go`` defines (watched namespaces, feature gates, leader election), read by the operator's own
parser (:func:`raykube.api.config.read_flags`); docs/doctor.md, "The operator's permissions"."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any, Final

from raykube.api import constants as c
from raykube.api.config import FlagReading, OperatorConfig, read_flags
from raykube.doctor import snapshot as s
from raykube.doctor.facts.objects import terminating
from raykube.doctor.facts.pods import is_ready, ray_container
from raykube.doctor.model import OperatorInfo
from raykube.doctor.snapshot import Obj, Snapshot
from raykube.kube import objects

# Kubernetes recommended label: the component of an application (KubeRay's operator Pods carry kuberay-operator).
COMPONENT_LABEL: Final = "app.kubernetes.io/component"


# Shells an operator may be started through (``sh -c "exec /manager --watch-namespace=a"``), and the characters that
# end a command in a shell script (``;``, ``&&``, ``|``, redirections).
_SHELLS: Final = frozenset({"sh", "bash", "ash", "dash", "zsh"})
_SHELL_OPERATORS: Final = ";&|<>"


def _words(script: str) -> list[str]:
    """A shell string split as the shell splits it into words, with its operators as words of their own."""
    lexer = shlex.shlex(script, posix=True, punctuation_chars=_SHELL_OPERATORS)
    lexer.whitespace_split = True
    return list(lexer)


def _argv(container: Mapping[str, Any]) -> list[str]:
    argv = [str(a) for a in (container.get("command") or []) + (container.get("args") or [])]
    # `sh -c "manager --watch-namespace=a"`: split shell strings too, so the flags are found either way.
    out: list[str] = []
    for arg in argv:
        if " " in arg and "--" in arg:
            try:
                out.extend(_words(arg))
            except ValueError:
                out.append(arg)
        else:
            out.append(arg)
    return out


def _is_flag(arg: str) -> bool:
    """``--flag``, ``--flag=value`` or Go's single-dash ``-flag``; not ``--`` nor a short option (``-c``, ``-m``)."""
    return arg.startswith("-") and len(arg.split("=", 1)[0]) > 2


def operator_args(container: Mapping[str, Any]) -> list[str]:
    """The flags on an operator container's command line, as the operator's flag parser gets them: what follows the
    program (and its subcommand, ``raykube operator``), in exec form or inside ``sh -c "..."``, up to the end of that
    command in a shell script."""
    argv = _argv(container)
    if argv and PurePosixPath(argv[0]).name in _SHELLS:
        argv = argv[1:]
        while argv and argv[0].startswith("-"):  # the shell's own options: -c, -ec, -lc, --
            argv = argv[1:]
    start = next((i for i, arg in enumerate(argv) if _is_flag(arg)), len(argv))
    flags = argv[start:]
    end = next((i for i, arg in enumerate(flags) if arg and set(arg) <= set(_SHELL_OPERATORS)), len(flags))
    if 0 < end < len(flags) and flags[end][0] in "<>" and flags[end - 1].isdigit():
        end -= 1  # the file descriptor of a redirection: `2>&1`
    return flags[:end]


def _config_file_unread(path: Path) -> OperatorConfig:
    """``--config FILE`` names a file in the operator's container (a mounted ConfigMap, whose values the snapshot does
    not keep): its settings are not known here, so they read as the Configuration's defaults (every namespace
    watched, leader election on). The operator ignores its other flags then, except ``--feature-gates``."""
    return OperatorConfig(config_file=path)


def operator_flags(container: Mapping[str, Any]) -> FlagReading:
    """The operator's configuration from its container's flags, read by the operator's own parser; what that parser
    refuses (unknown flags, bad values) is noted in :attr:`~raykube.api.config.FlagReading.problems`, never raised."""
    return read_flags(operator_args(container), load_file=_config_file_unread)


def is_operator_deployment(deployment: Mapping[str, Any]) -> bool:
    """An operator Deployment: by name, or by the labels of raykube's and KubeRay's charts and kustomize install
    (``app.kubernetes.io/name=kuberay-operator``, or ``app.kubernetes.io/component=kuberay-operator``)."""
    template_meta = ((deployment.get("spec") or {}).get("template") or {}).get("metadata") or {}
    labels = {**(template_meta.get("labels") or {}), **objects.labels(deployment)}
    return (
        objects.name(deployment) == c.OPERATOR_DEPLOYMENT_NAME
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
        flags = operator_flags(container)
        config = flags.config
        namespace = objects.namespace(deployment)
        status = deployment.get("status") or {}
        selector = spec.get("selector") or {}
        pods = [
            p
            for p in snap.in_namespace(s.PODS, namespace)
            if selector_matches(selector, objects.labels(p)) and not terminating(p)
        ]
        ready_pods = sum(1 for p in pods if is_ready(p))
        ready_replicas = ready_pods if pods else int(status.get("readyReplicas") or 0)
        image = str(container.get("image") or "")
        implementation = "raykube" if ("raykube" in image or (argv[:1] == ["raykube"])) else "kuberay"
        found.append(
            OperatorInfo(
                namespace=namespace,
                name=objects.name(deployment),
                implementation=implementation,
                image=image,
                ready=ready_replicas > 0,
                ready_replicas=ready_replicas,
                replicas=int(spec.get("replicas") or 0) if "replicas" in spec else 1,
                watch_namespaces=config.watch_namespaces,
                service_account=str(template.get("serviceAccountName") or template.get("serviceAccount") or "default"),
                feature_gates=dict(config.feature_gates),
                leader_election=config.enable_leader_election,
                leader_election_namespace=config.leader_election_namespace or namespace,
                flag_problems=flags.problems,
            )
        )
    return sorted(found, key=lambda o: (o.namespace, o.name))


def operator_pods(snap: Snapshot, operator: OperatorInfo) -> list[Obj]:
    deployment = snap.get(s.DEPLOYMENTS, operator.namespace, operator.name) or {}
    selector = (deployment.get("spec") or {}).get("selector") or {}
    return [p for p in snap.in_namespace(s.PODS, operator.namespace) if selector_matches(selector, objects.labels(p))]
