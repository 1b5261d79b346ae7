"""RayJob validation: metadata, spec (with its ``rayClusterSpec``) and status.

Mirrors KubeRay v1.6.1 ``ray-operator/controllers/ray/utils/validation.go``: ``ValidateRayJobMetadata``,
``ValidateRayJobSpec`` (with ``validateDeletionConfiguration``, ``validateLegacyDeletionPolicies``,
``validateDeletionRules``, ``validateDeletionCondition`` and ``validateTTLConsistency``) and
``ValidateRayJobStatus``, plus the rules of the RayJob CRD. The embedded cluster spec is checked by
:func:`raykube.api.validation.raycluster._check_cluster_spec`, its messages prefixed "The RayJob spec is invalid: "
and reported where KubeRay reports them (after the RayJob's own rules, before the ``runtimeEnvYAML`` and limit
checks). Tags as in :mod:`raykube.api.validation`.

Metadata: the name is at most 47 characters and a DNS-1035 label (``ValidateRayJobMetadata``); with
``generateName`` the length counts the 5 characters the API server appends (own).

Spec (``ValidateRayJobSpec``):

* ``suspend`` needs ``shutdownAfterJobFinishes``; ``ttlSecondsAfterFinished`` ≥ 0, and > 0 needs
  ``shutdownAfterJobFinishes``.
* ``deletionStrategy`` needs the RayJobDeletionPolicy gate; legacy ``onSuccess``/``onFailure`` and ``deletionRules``
  are exclusive (also CEL) and one of them is required (also CEL); legacy needs both policies set, only DeleteNone
  and DeleteSelf with ``clusterSelector``, no DeleteWorkers with autoscaling, no DeleteNone with
  ``shutdownAfterJobFinishes``; rules are incompatible with ``shutdownAfterJobFinishes``, each condition has exactly
  one of ``jobStatus``/``jobDeploymentStatus`` and ``ttlSeconds`` ≥ 0, no DeleteCluster/DeleteWorkers with
  ``clusterSelector``, no DeleteWorkers with autoscaling, no duplicate (policy, condition), and per condition the
  TTLs do not decrease along DeleteWorkers ≤ DeleteCluster ≤ DeleteSelf. Policy and status enums (CRD).
* one of ``rayClusterSpec`` and ``clusterSelector`` is set; with ``clusterSelector``: its ``ray.io/cluster`` is
  non-empty, no ``suspend``, no SidecarMode, no ``backoffLimit`` > 0. (Both set is accepted: the selector wins.)
* InteractiveMode: no ``backoffLimit`` > 0. SidecarMode: no ``submitterPodTemplate``, no ``submitterConfig``, head
  ``restartPolicy`` Never or unset. ``submissionMode`` is one of the four modes (own: KubeRay has no enum).
* K8s token auth in ``rayClusterSpec`` is not supported.
* ``runtimeEnvYAML`` parses as a YAML mapping (``UnmarshalRuntimeEnvYAML``); ``activeDeadlineSeconds`` > 0;
  ``preRunningDeadlineSeconds`` > 0; ``backoffLimit`` ≥ 0.

Status: ``jobDeploymentStatus`` Waiting only in InteractiveMode (``ValidateRayJobStatus``).

Not implemented: an entrypoint requirement (KubeRay has none).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import yaml

from raykube.api import constants as c
from raykube.api.validation.common import (
    FieldError,
    _check_managed_by,
    _check_name,
    _child,
    _Errors,
    _gates,
    _key,
    _read_metadata,
    _root,
    _string_map,
    _type_name,
    _unsupported,
    _View,
)
from raykube.api.validation.raycluster import _check_cluster_spec, _ClusterSummary

__all__ = ["validate_rayjob", "validate_rayjob_metadata", "validate_rayjob_spec", "validate_rayjob_status"]

_RAYJOB_SPEC_INVALID: Final = "The RayJob spec is invalid: "
_RAYJOB_METADATA_INVALID: Final = "The RayJob metadata is invalid: "


def validate_rayjob_metadata(metadata: object, *, path: str = "metadata") -> list[FieldError]:
    """RayJob name rules (``ValidateRayJobMetadata``)."""
    errs = _Errors()
    view, _, _ = _read_metadata(errs, metadata, path)
    _check_name(errs, view, kind=c.KIND_RAYJOB, limit=c.MAX_RAYJOB_NAME_LENGTH, prefix=_RAYJOB_METADATA_INVALID)
    return errs.items


def _check_legacy_deletion(
    errs: _Errors, strategy: _View, *, selector_mode: bool, autoscaling: bool, shutdown: bool
) -> None:
    on_success = strategy.obj("onSuccess")
    on_failure = strategy.obj("onFailure")
    if not (on_success.present and on_failure.present):
        errs.kuberay(
            strategy.path,
            "both DeletionStrategy.OnSuccess and DeletionStrategy.OnFailure must be set when using the legacy "
            "deletion policy fields of DeletionStrategy",
        )
    policies: list[tuple[str, str]] = []
    for view, field, outcome in ((on_success, "OnSuccess", "success"), (on_failure, "OnFailure", "failure")):
        if not view.present:
            continue
        policy = view.enum("policy", c.DELETION_POLICIES)
        if not view.has("policy"):
            errs.kuberay(
                view.at("policy"),
                f"the DeletionPolicyType field of DeletionStrategy.{field} cannot be unset when DeletionStrategy is "
                "enabled",
            )
        if policy is None:
            continue
        policies.append((view.at("policy"), policy))
        if selector_mode and policy in (c.DELETE_CLUSTER, c.DELETE_WORKERS):
            errs.kuberay(
                view.at("policy"), f"the ClusterSelector mode doesn't support DeletionStrategy={policy} on {outcome}"
            )
    workers = [p for p in policies if p[1] == c.DELETE_WORKERS]
    if workers and autoscaling:
        errs.kuberay(
            workers[0][0],
            "DeletionStrategy=DeleteWorkers currently does not support RayCluster with autoscaling enabled",
        )
    nones = [p for p in policies if p[1] == c.DELETE_NONE]
    if nones and shutdown:
        errs.kuberay(
            nones[0][0],
            "The RayJob spec is invalid: shutdownAfterJobFinshes is set to 'true' while deletion policy is "
            "'DeleteNone'",
        )


@dataclass(frozen=True, slots=True)
class _DeletionRule:
    path: str
    condition: tuple[str, str]
    policy: str
    ttl: int


def _read_deletion_rule(
    errs: _Errors, i: int, rule: _View, *, selector_mode: bool, autoscaling: bool
) -> _DeletionRule | None:
    """One rule, checked on its own (``validateDeletionCondition`` and the context checks); None if it failed."""
    prefix = f"deletionRules[{i}]: "
    policy = rule.enum("policy", c.DELETION_POLICIES)
    rule.require("policy")
    condition = rule.obj("condition")
    rule.require("condition")
    job_status = condition.enum("jobStatus", c.DELETION_CONDITION_JOB_STATUSES)
    deployment_status = condition.enum("jobDeploymentStatus", c.DELETION_CONDITION_JOB_DEPLOYMENT_STATUSES)
    ttl = condition.integer("ttlSeconds") or 0
    has_job_status, has_deployment_status = condition.has("jobStatus"), condition.has("jobDeploymentStatus")
    problem: tuple[str, str] | None = None
    if has_job_status and has_deployment_status:
        problem = (condition.path, "cannot set both JobStatus and JobDeploymentStatus at the same time")
    elif not has_job_status and not has_deployment_status:
        problem = (condition.path, "exactly one of JobStatus and JobDeploymentStatus must be set")
    elif ttl < 0:
        problem = (condition.at("ttlSeconds"), "TTLSeconds must be non-negative")
    elif selector_mode and policy in (c.DELETE_CLUSTER, c.DELETE_WORKERS):
        problem = (rule.at("policy"), f"DeletionPolicyType '{policy}' not supported when ClusterSelector is set")
    elif autoscaling and policy == c.DELETE_WORKERS:
        problem = (rule.at("policy"), "DeletionPolicyType 'DeleteWorkers' not supported with autoscaling enabled")
    if problem is not None:
        errs.kuberay(problem[0], prefix + problem[1])
        return None
    if policy is None:
        return None
    if job_status is not None:
        return _DeletionRule(rule.path, ("JobStatus", job_status), policy, ttl)
    if deployment_status is not None:
        return _DeletionRule(rule.path, ("JobDeploymentStatus", deployment_status), policy, ttl)
    return None


def _check_deletion_rules(
    errs: _Errors, strategy: _View, rules: Sequence[_View], *, selector_mode: bool, autoscaling: bool
) -> None:
    by_condition: dict[tuple[str, str], dict[str, int]] = {}
    for i, view in enumerate(rules):
        rule = _read_deletion_rule(errs, i, view, selector_mode=selector_mode, autoscaling=autoscaling)
        if rule is None:
            continue
        ttls = by_condition.setdefault(rule.condition, {})
        if rule.policy in ttls:
            kind, value = rule.condition
            errs.kuberay(
                rule.path,
                f"deletionRules[{i}]: duplicate rule for DeletionPolicyType '{rule.policy}' and {kind} '{value}'",
            )
        else:
            ttls[rule.policy] = rule.ttl
    for (kind, value), ttls in by_condition.items():
        ordered = [(policy, ttls[policy]) for policy in c.DELETION_TTL_ORDER if policy in ttls]
        for (before, before_ttl), (policy, ttl) in itertools.pairwise(ordered):
            if ttl < before_ttl:
                errs.kuberay(
                    strategy.at("deletionRules"),
                    f"for {kind} '{value}': {policy} TTL ({ttl}) must be >= {before} TTL ({before_ttl})",
                )


def _check_deletion_strategy(
    errs: _Errors,
    spec: _View,
    *,
    shutdown: bool,
    ttl: int,
    selector_mode: bool,
    autoscaling: bool,
    gates: Mapping[str, bool],
) -> None:
    if not shutdown and ttl > 0:
        errs.kuberay(
            spec.at("ttlSecondsAfterFinished"),
            "The RayJob spec is invalid: a RayJob with shutdownAfterJobFinishes set to false cannot have "
            "TTLSecondsAfterFinished",
        )
    strategy = spec.obj("deletionStrategy")
    rules = strategy.objects("deletionRules")
    if not strategy.present:
        return
    if not gates.get(c.GATE_RAYJOB_DELETION_POLICY, False):
        errs.kuberay(
            strategy.path, f"{c.GATE_RAYJOB_DELETION_POLICY} feature gate must be enabled to use DeletionStrategy"
        )
    legacy = strategy.present and (strategy.has("onSuccess") or strategy.has("onFailure"))
    if rules and shutdown:
        errs.kuberay(
            strategy.at("deletionRules"),
            "The RayJob spec is invalid: spec.shutdownAfterJobFinishes and spec.deletionStrategy.deletionRules are "
            "mutually exclusive",
        )
    if rules and legacy:
        errs.kuberay(
            strategy.path,
            "The RayJob spec is invalid: Cannot use both legacy onSuccess/onFailure fields and deletionRules "
            "simultaneously",
        )
    if legacy:
        _check_legacy_deletion(errs, strategy, selector_mode=selector_mode, autoscaling=autoscaling, shutdown=shutdown)
    if rules:
        _check_deletion_rules(errs, strategy, rules, selector_mode=selector_mode, autoscaling=autoscaling)
    if not legacy and not rules:
        errs.kuberay(
            strategy.path,
            "The RayJob spec is invalid: DeletionStrategy requires either BOTH onSuccess and onFailure, OR the "
            "deletionRules field (cannot be empty)",
        )


def _yaml_problem(error: yaml.YAMLError) -> str:
    """A one-line account of a YAML syntax error, in the form Go's YAML library uses."""
    if isinstance(error, yaml.MarkedYAMLError) and error.problem_mark is not None:
        return f"yaml: line {error.problem_mark.line + 1}: {error.problem}"
    return "yaml: " + " ".join(str(error).split())


def _runtime_env_error(text: str) -> str:
    """Why ``runtimeEnvYAML`` is not a YAML mapping (``UnmarshalRuntimeEnvYAML``), or ``""``."""
    if not text:
        return ""
    prefix = f"failed to unmarshal RuntimeEnvYAML: {text}: "
    try:
        first = next(iter(yaml.safe_load_all(text)), None)
    except yaml.YAMLError as error:
        return prefix + "error converting YAML to JSON: " + _yaml_problem(error)
    except RecursionError:
        return prefix + "error converting YAML to JSON: yaml: exceeded max depth"
    if first is None or isinstance(first, dict):
        return ""
    return prefix + f"json: cannot unmarshal {_type_name(first)} into Go value of type map[string]interface {{}}"


def _check_cluster_source(errs: _Errors, spec: _View, *, mode: str, backoff_limit: int | None) -> None:
    """``rayClusterSpec`` or ``clusterSelector``, and what the selector mode excludes."""
    selector = spec.string_map("clusterSelector")
    if spec.flag("suspend") and selector:
        errs.kuberay(
            spec.at("suspend"),
            "The RayJob spec is invalid: the ClusterSelector mode doesn't support the suspend operation",
        )
    if not spec.has("rayClusterSpec") and not selector:
        errs.kuberay(
            spec.at("rayClusterSpec"),
            "The RayJob spec is invalid: one of RayClusterSpec or ClusterSelector must be set",
        )
    if not selector:
        return
    if not selector.get(c.RAY_CLUSTER_LABEL):
        errs.kuberay(
            _key(spec.at("clusterSelector"), c.RAY_CLUSTER_LABEL), "cluster name in ClusterSelector should not be empty"
        )
    if mode == c.SUBMISSION_MODE_SIDECAR:
        errs.kuberay(spec.at("submissionMode"), "ClusterSelector is not supported in SidecarMode")
    if backoff_limit is not None and backoff_limit > 0:
        errs.kuberay(
            spec.at("backoffLimit"),
            "The RayJob spec is invalid: BackoffLimit is incompatible with ClusterSelector mode",
        )


def _check_submission_mode(
    errs: _Errors, spec: _View, *, mode: str, backoff_limit: int | None, summary: _ClusterSummary | None
) -> None:
    if mode == c.SUBMISSION_MODE_INTERACTIVE and backoff_limit is not None and backoff_limit > 0:
        errs.kuberay(
            spec.at("backoffLimit"), "The RayJob spec is invalid: BackoffLimit is incompatible with InteractiveMode"
        )
    if mode not in c.SUBMISSION_MODES:
        errs.schema(spec.at("submissionMode"), _unsupported(mode, c.SUBMISSION_MODES))
    if mode != c.SUBMISSION_MODE_SIDECAR:
        return
    if spec.has("submitterPodTemplate"):
        errs.kuberay(spec.at("submitterPodTemplate"), "Currently, SidecarMode doesn't support SubmitterPodTemplate")
    if spec.has("submitterConfig"):
        errs.kuberay(spec.at("submitterConfig"), "Currently, SidecarMode doesn't support SubmitterConfig")
    if summary is not None and summary.head_template.restart_policy not in ("", c.RESTART_POLICY_NEVER):
        errs.kuberay(
            _child(summary.head_template.spec_path, "restartPolicy"),
            "restartPolicy for head Pod should be Never or unset when using SidecarMode",
        )


def _check_rayjob_limits(errs: _Errors, spec: _View, *, backoff_limit: int | None) -> None:
    """``runtimeEnvYAML`` and the numeric limits checked last in ``ValidateRayJobSpec``."""
    runtime_env_error = _runtime_env_error(spec.text("runtimeEnvYAML"))
    if runtime_env_error:
        errs.kuberay(spec.at("runtimeEnvYAML"), runtime_env_error)
    for key in ("activeDeadlineSeconds", "preRunningDeadlineSeconds"):
        value = spec.integer(key)
        if value is not None and value <= 0:
            errs.kuberay(spec.at(key), f"The RayJob spec is invalid: {key} must be a positive integer")
    if backoff_limit is not None and backoff_limit < 0:
        errs.kuberay(spec.at("backoffLimit"), "The RayJob spec is invalid: backoffLimit must be a positive integer")


def _check_rayjob_spec(
    errs: _Errors,
    spec_value: object,
    *,
    annotations: Mapping[str, str],
    annotations_path: str,
    gates: Mapping[str, bool],
    path: str,
) -> None:
    spec = _View.of(errs, spec_value, path)
    _check_managed_by(errs, spec)
    suspend = spec.flag("suspend")
    shutdown = spec.flag("shutdownAfterJobFinishes")
    ttl = spec.integer("ttlSecondsAfterFinished") or 0
    backoff_limit = spec.integer("backoffLimit")
    mode = spec.text("submissionMode") or c.SUBMISSION_MODE_K8S_JOB
    spec.obj("submitterPodTemplate")
    spec.obj("submitterConfig").integer("backoffLimit")
    for key in ("entrypoint", "jobId", "entrypointResources", "schedule"):
        spec.text(key)
    for key in ("entrypointNumCpus", "entrypointNumGpus"):
        spec.number(key)
    spec.string_map("metadata")

    # The cluster template is checked first (its summary feeds the RayJob rules) but reported where KubeRay does.
    cluster_errs = _Errors()
    summary: _ClusterSummary | None = None
    if spec.has("rayClusterSpec"):
        summary = _check_cluster_spec(
            cluster_errs.wrapped(errs.prefix + _RAYJOB_SPEC_INVALID),
            spec.raw("rayClusterSpec"),
            annotations=annotations,
            annotations_path=annotations_path,
            gates=gates,
            path=spec.at("rayClusterSpec"),
            embedded=True,
        )

    if suspend and not shutdown:
        errs.kuberay(
            spec.at("suspend"),
            "The RayJob spec is invalid: a RayJob with shutdownAfterJobFinishes set to false is not allowed to be "
            "suspended",
        )
    if ttl < 0:
        errs.kuberay(
            spec.at("ttlSecondsAfterFinished"),
            "The RayJob spec is invalid: TTLSecondsAfterFinished must be a non-negative integer",
        )
    _check_deletion_strategy(
        errs,
        spec,
        shutdown=shutdown,
        ttl=ttl,
        selector_mode=bool(spec.string_map("clusterSelector")),
        autoscaling=summary is not None and summary.autoscaling,
        gates=gates,
    )
    _check_cluster_source(errs, spec, mode=mode, backoff_limit=backoff_limit)
    _check_submission_mode(errs, spec, mode=mode, backoff_limit=backoff_limit, summary=summary)
    if summary is not None and summary.k8s_token_auth:
        errs.kuberay(
            summary.k8s_token_auth_path,
            "The RayJob spec is invalid: K8s token auth mode is currently not supported for RayJob",
        )
    errs.extend(cluster_errs)
    _check_rayjob_limits(errs, spec, backoff_limit=backoff_limit)


def validate_rayjob_spec(
    spec: object,
    *,
    annotations: Mapping[str, str] | None = None,
    features: Mapping[str, bool] | None = None,
    path: str = "spec",
    message_prefix: str = "",
    annotations_path: str = "metadata.annotations",
) -> list[FieldError]:
    """The RayJob spec rules (``ValidateRayJobSpec``), including its ``rayClusterSpec``."""
    errs = _Errors()
    _check_rayjob_spec(
        errs.wrapped(message_prefix),
        spec,
        annotations=_string_map(annotations),
        annotations_path=annotations_path,
        gates=_gates(features),
        path=path,
    )
    return errs.items


def validate_rayjob_status(status: object, *, spec: object = None, path: str = "status") -> list[FieldError]:
    """RayJob status consistency (``ValidateRayJobStatus``): Waiting only in InteractiveMode."""
    errs = _Errors()
    view = _View.of(errs, status, path)
    deployment_status = view.text("jobDeploymentStatus")
    mode = _View.of(_Errors(), spec, "spec").text("submissionMode") or c.SUBMISSION_MODE_K8S_JOB
    if deployment_status == c.JOB_DEPLOYMENT_STATUS_WAITING and mode != c.SUBMISSION_MODE_INTERACTIVE:
        errs.kuberay(
            view.at("jobDeploymentStatus"),
            "The RayJob status is invalid: JobDeploymentStatus cannot be `Waiting` when SubmissionMode is not "
            "InteractiveMode",
        )
    return errs.items


def validate_rayjob(obj: object, *, features: Mapping[str, bool] | None = None) -> list[FieldError]:
    """Every rule for a whole RayJob: metadata, spec (with its cluster template) and status."""
    errs = _Errors()
    root = _root(errs, obj, c.KIND_RAYJOB)
    if root is None:
        return errs.items
    metadata, annotations, _ = _read_metadata(errs, root.raw("metadata"), "metadata")
    _check_name(errs, metadata, kind=c.KIND_RAYJOB, limit=c.MAX_RAYJOB_NAME_LENGTH, prefix=_RAYJOB_METADATA_INVALID)
    spec_value = root.raw("spec")
    _check_rayjob_spec(
        errs,
        {} if spec_value is None else spec_value,
        annotations=annotations,
        annotations_path="metadata.annotations",
        gates=_gates(features),
        path="spec",
    )
    for error in validate_rayjob_status(root.raw("status"), spec=spec_value):
        errs.kuberay(error.path, error.message)
    return errs.items
