"""What the kubelet needs before a Ray container starts: its ConfigMaps, Secrets and keys, and its image.

References are checked from the objects, so a missing Secret in ``envFrom`` is found before any Pod reports
``CreateContainerConfigError`` (and even when the Pods started before the Secret went away). Only names and keys are
compared: the doctor never reads a Secret's or ConfigMap's values.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from raykube.api import constants as c
from raykube.builders.groups import is_gpu_resource_name
from raykube.doctor import facts
from raykube.doctor import snapshot as s
from raykube.doctor import tokens as t
from raykube.doctor.facts import ClusterView, ConfigRef
from raykube.doctor.model import Evidence, Finding, ObjectRef
from raykube.doctor.rules.base import (
    STAGE_ADVISORY,
    STAGE_PLACEMENT,
    STAGE_START,
    checker,
    field_evidence,
    finding,
    plural,
    rule,
)
from raykube.doctor.snapshot import Obj, Snapshot
from raykube.kube import objects

CONFIGMAP_MISSING = rule(
    "C06",
    "CONFIGMAP_NOT_FOUND",
    STAGE_PLACEMENT,
    "A ConfigMap the Ray containers need (env, envFrom, volume) is missing",
)
SECRET_MISSING = rule(
    "C07", "SECRET_NOT_FOUND", STAGE_PLACEMENT, "A Secret the Ray containers need (env, envFrom, volume) is missing"
)
KEY_MISSING = rule(
    "C08",
    "CONFIG_KEY_NOT_FOUND",
    STAGE_PLACEMENT,
    "A key the Ray containers read from a ConfigMap or Secret is missing",
)
CONFIG_ERROR = rule(
    "C09",
    "CONTAINER_CONFIG_ERROR",
    STAGE_START,
    "The kubelet cannot create a Ray container (CreateContainerConfigError, CreateContainerError, RunContainerError)",
)
IMAGE_PULL = rule(
    "C01",
    "IMAGE_PULL_FAILED",
    STAGE_PLACEMENT,
    "A Ray Pod cannot pull its image (ErrImagePull, ImagePullBackOff, InvalidImageName)",
    ["ray-project/kuberay#1990"],
)
VERSION_MISMATCH = rule(
    "C04",
    "RAY_VERSION_MISMATCH",
    STAGE_ADVISORY,
    "Head, worker groups or autoscaler run different Ray versions",
    ["ray-project/kuberay#154", "ray-project/ray#44063"],
)
VERSION_DRIFT = rule(
    "C05",
    "RAYVERSION_FIELD_DRIFT",
    STAGE_ADVISORY,
    "spec.rayVersion differs from the Ray version of the image",
    ["ray-project/kuberay#4760"],
)
GPU_NOT_ADVERTISED = rule(
    "G06",
    "GPU_NOT_ADVERTISED",
    STAGE_ADVISORY,
    "A GPU resource key Ray does not count: Ray sees no GPU",
    ["ray-project/kuberay#2484", "ray-project/kuberay#321"],
)
SHM_TOO_SMALL = rule(
    "H01",
    "SHM_TOO_SMALL",
    STAGE_ADVISORY,
    "Ray's object store does not fit in /dev/shm (object-store-memory, or the Pod's own /dev/shm): it goes to /tmp",
    ["ray-project/kuberay#201", "ray-project/ray#14616"],
)

# Kubernetes kubelet waiting reasons.
PULL_REASONS = frozenset(
    {
        "ErrImagePull",
        "ImagePullBackOff",
        "InvalidImageName",
        "ErrImageNeverPull",
        "RegistryUnavailable",
        "SignatureValidationFailed",
    }
)
CONFIG_REASONS = frozenset(
    {
        "CreateContainerConfigError",
        "CreateContainerError",
        "RunContainerError",
        "PreStartHookError",
        "PreCreateHookError",
        "ContainerCannotRun",
    }
)


@dataclass(frozen=True)
class Use:
    group: str
    path: str  # full path in the RayCluster
    ref: ConfigRef


def _uses(view: ClusterView) -> list[Use]:
    out = []
    for group, path, template in view.templates():
        spec = facts.pod_spec(template)
        for ref in facts.config_refs(spec):
            out.append(Use(group, f"{path}.{ref.path}", ref))
        for index, pull in enumerate(spec.get("imagePullSecrets") or []):
            if isinstance(pull, Mapping) and pull.get("name"):
                ref = ConfigRef("Secret", str(pull["name"]), None, True, f"spec.imagePullSecrets[{index}]")
                out.append(Use(group, f"{path}.{ref.path}", ref))
    spec = view.spec
    for option in ("redisPassword", "redisUsername"):
        source = ((spec.get("gcsFaultToleranceOptions") or {}).get(option) or {}).get("valueFrom") or {}
        for field_name, kind in (("secretKeyRef", "Secret"), ("configMapKeyRef", "ConfigMap")):
            selector = source.get(field_name)
            if isinstance(selector, Mapping) and selector.get("name"):
                path = f"spec.gcsFaultToleranceOptions.{option}.valueFrom.{field_name}"
                ref = ConfigRef(kind, str(selector["name"]), selector.get("key"), bool(selector.get("optional")), path)
                out.append(Use(c.HEAD_GROUP_NAME, path, ref))
    auth = spec.get("authOptions") or {}
    if auth.get("mode") == c.AUTH_MODE_TOKEN and auth.get("secretName"):
        path = "spec.authOptions.secretName"
        out.append(
            Use(
                c.HEAD_GROUP_NAME,
                path,
                ConfigRef("Secret", str(auth["secretName"]), c.RAY_AUTH_TOKEN_SECRET_KEY, False, path),
            )
        )
    return out


def _keys(obj: Mapping[str, Any]) -> set[str]:
    return {str(k) for key in ("data", "binaryData", "stringData") for k in (obj.get(key) or {})}


def _is_volume(use: Use) -> bool:
    return ".volumes[" in use.path


def _is_pull_secret(use: Use) -> bool:
    return "imagePullSecrets" in use.path


def _pods_and_tokens(view: ClusterView, uses: list[Use]) -> tuple[list[Obj], set[str]]:
    groups = sorted({u.group for u in uses})
    pods = [p for g in groups for p in view.pods_of_group(g)]
    tokens: set[str] = set()
    for pod in pods:
        key = s.key_of(pod)
        tokens |= t.pod_down(key)
        if any(_is_pull_secret(u) for u in uses):
            tokens.add(t.pod_image(key))
        if any(_is_volume(u) for u in uses):
            tokens.add(t.pod_mount(key))
        if any(not _is_volume(u) and not _is_pull_secret(u) for u in uses):
            tokens.add(t.pod_config(key))
    for group in groups:
        tokens.add(t.head(view.key) if group == c.HEAD_GROUP_NAME else t.workers(view.key, group))
    return pods, tokens


def _pod_reports(pods: list[Obj], name: str) -> list[Evidence]:
    out = []
    for pod in pods:
        for state in facts.container_states(pod):
            if state.reason in CONFIG_REASONS and name in state.message:
                out.append(
                    field_evidence(
                        facts.ref(pod, "Pod"),
                        f"{state.path}.state.waiting",
                        f"{state.reason}: {state.message}",
                        "pod.status",
                    )
                )
    return out


@checker(CONFIGMAP_MISSING, SECRET_MISSING, KEY_MISSING)
def check_references(snap: Snapshot) -> Iterator[Finding]:
    for view in facts.cluster_views(snap):
        problems: dict[tuple[str, str, str | None], list[Use]] = {}
        for use in _uses(view):
            resource = s.CONFIGMAPS if use.ref.kind == "ConfigMap" else s.SECRETS
            if not snap.has(resource):
                continue
            obj = snap.get(resource, view.namespace, use.ref.name)
            if obj is None:
                if not use.ref.optional or _is_pull_secret(use):
                    problems.setdefault((use.ref.kind, use.ref.name, None), []).append(use)
            elif use.ref.key is not None and use.ref.key not in _keys(obj) and not use.ref.optional:
                problems.setdefault((use.ref.kind, use.ref.name, use.ref.key), []).append(use)
        for (kind, name, key), uses in sorted(
            problems.items(), key=lambda item: (item[0][0], item[0][1], item[0][2] or "")
        ):
            pods, tokens = _pods_and_tokens(view, uses)
            obj_ref = ObjectRef(kind, name, view.namespace)
            evidence = [
                field_evidence(view.ref, u.path, f"{name}" + (f" key {key}" if key else ""), "cr.spec")
                for u in uses[:4]
            ]
            evidence.append(
                field_evidence(obj_ref, "data" if key else "metadata.name", f"no key {key}" if key else "NotFound")
            )
            evidence += _pod_reports(pods, name)[:3]
            groups = sorted({u.group for u in uses})
            running = [p for p in pods if facts.is_ready(p)]
            pull_only = all(_is_pull_secret(u) for u in uses)
            if pull_only:
                yield finding(
                    SECRET_MISSING,
                    cluster=view.ref,
                    obj=obj_ref,
                    severity="warning",
                    title=f'imagePullSecret "{name}" does not exist (groups {", ".join(groups)})',
                    evidence=evidence,
                    explanation="The kubelet pulls without it; a private registry then answers 401/403 and the "
                    "Pods stay in ImagePullBackOff.",
                    remediation=[
                        f"Create the docker-registry Secret {name} in {view.namespace} or drop the reference."
                    ],
                    effects={t.pod_image(s.key_of(p)) for p in pods},
                )
                continue
            how = "a volume" if all(_is_volume(u) for u in uses) else "env/envFrom"
            spec_rule = KEY_MISSING if key else (CONFIGMAP_MISSING if kind == "ConfigMap" else SECRET_MISSING)
            title = (
                f'{kind} "{name}" has no key "{key}"' if key else f'{kind} "{name}" does not exist'
            ) + f" ({how} of {'the head' if groups == [c.HEAD_GROUP_NAME] else 'groups ' + ', '.join(groups)})"
            kubelet = (
                f'MountVolume.SetUp failed for volume ... : {kind.lower()} "{name}" not found'
                if how == "a volume"
                else (
                    f"couldn't find key {key} in {kind} {view.namespace}/{name}"
                    if key
                    else f'{kind.lower()} "{name}" not found'
                )
            )
            explanation = (
                f"The kubelet cannot start the Ray containers that reference it: they stay in "
                f"{'ContainerCreating (FailedMount)' if how == 'a volume' else 'CreateContainerConfigError'} "
                f'with "{kubelet}".'
            )
            if running:
                explanation += (
                    f" {plural(len(running), 'Pod')} already running (started before it went missing); the next "
                    "restart or new Pod fails."
                )
            yield finding(
                spec_rule,
                cluster=view.ref,
                obj=obj_ref,
                severity="error",
                title=title,
                evidence=evidence,
                explanation=explanation,
                remediation=[
                    (f"Add the key {key} to {kind} {name}" if key else f"Create {kind} {name} in {view.namespace}")
                    + ", or mark the reference optional: true if the containers can do without it.",
                ],
                effects=tokens,
            )


@checker(CONFIG_ERROR)
def check_container_config(snap: Snapshot) -> Iterator[Finding]:
    for view in facts.cluster_views(snap):
        hits: list[tuple[Obj, facts.ContainerState]] = []
        for pod in view.pods:
            if facts.terminating(pod):
                continue
            for state in facts.container_states(pod):
                if state.reason in CONFIG_REASONS:
                    hits.append((pod, state))
                    break
        if not hits:
            continue
        pods = [p for p, _ in hits]
        effects: set[str] = set()
        for pod in pods:
            effects |= t.pod_down(s.key_of(pod))
            effects.add(
                t.head(view.key)
                if facts.node_type(pod) == c.NODE_TYPE_HEAD
                else t.workers(view.key, facts.group_of(pod))
            )
        pod, state = hits[0]
        yield finding(
            CONFIG_ERROR,
            cluster=view.ref,
            obj=facts.ref(pod, "Pod"),
            severity="error",
            title=f"{plural(len(pods), 'Ray Pod')} cannot start a container: {state.reason}: {state.message[:160]}",
            evidence=[
                field_evidence(
                    facts.ref(p, "Pod"), f"{st.path}.state.waiting", f"{st.reason}: {st.message}", "pod.status"
                )
                for p, st in hits[:3]
            ],
            explanation="The kubelet could not build or start the container from its spec; the message names what "
            "it missed.",
            remediation=[f"kubectl describe pod {objects.name(pod)} -n {view.namespace}"],
            symptoms={t.pod_config(s.key_of(p)) for p in pods},
            effects=effects,
        )


@checker(IMAGE_PULL)
def check_images(snap: Snapshot) -> Iterator[Finding]:
    for view in facts.cluster_views(snap):
        by_image: dict[str, list[tuple[Obj, facts.ContainerState]]] = {}
        for pod in view.pods:
            if facts.terminating(pod):
                continue
            spec = facts.pod_spec(pod)
            images = {str(ct.get("name")): str(ct.get("image") or "") for _, ct in facts.containers(spec)}
            for state in facts.container_states(pod):
                if state.reason in PULL_REASONS:
                    by_image.setdefault(images.get(state.name, "?"), []).append((pod, state))
        for image, hits in sorted(by_image.items()):
            pods = list({s.key_of(p): p for p, _ in hits}.values())
            pod, state = hits[0]
            pod_ref = facts.ref(pod, "Pod")
            evidence = [
                field_evidence(
                    facts.ref(p, "Pod"),
                    f"{st.path}.state.waiting.reason",
                    f"{st.reason}" + (f": {st.message}" if st.message else ""),
                    "pod.status",
                )
                for p, st in hits[:3]
            ]
            for event in facts.latest_events(snap.events_for(pod), "Failed", "BackOff", "ErrImagePull")[:2]:
                if "pull" in facts.event_message(event).lower() or "image" in facts.event_message(event).lower():
                    evidence.append(facts.event_evidence(event, pod_ref, snap.now))
            pull_secrets = [str(x.get("name")) for x in facts.pod_spec(pod).get("imagePullSecrets") or []]
            evidence.append(field_evidence(pod_ref, "spec.imagePullSecrets", pull_secrets or "none", "pod.spec"))
            effects: set[str] = set()
            for p in pods:
                effects |= t.pod_down(s.key_of(p))
                effects.add(
                    t.head(view.key)
                    if facts.node_type(p) == c.NODE_TYPE_HEAD
                    else t.workers(view.key, facts.group_of(p))
                )
            init = " (init container: the worker image)" if state.init else ""
            yield finding(
                IMAGE_PULL,
                cluster=view.ref,
                obj=pod_ref,
                severity="error",
                title=f"{plural(len(pods), 'Ray Pod')} cannot pull image {image}{init}: {state.reason}",
                evidence=evidence,
                explanation="The container never starts while the kubelet cannot pull its image; it retries with a "
                "growing back-off (ImagePullBackOff).",
                remediation=[
                    "Correct the image (registry, name, tag) in the group's template; "
                    "check it exists: `docker manifest inspect " + image + "`.",
                    "For a private registry, reference an imagePullSecret that exists in the namespace.",
                    "Large rayproject/ray-ml images: pre-pull them (docs: reduce-image-pull-latency).",
                ],
                symptoms={t.pod_image(s.key_of(p)) for p in pods},
                effects=effects,
            )


@checker(VERSION_MISMATCH, VERSION_DRIFT)
def check_versions(snap: Snapshot) -> Iterator[Finding]:
    for view in facts.cluster_views(snap):
        versions: dict[str, list[tuple[str, str]]] = {}
        for _group, path, template in view.templates():
            image = str(facts.ray_container(facts.pod_spec(template)).get("image") or "")
            version = facts.image_ray_version(image)
            if version:
                versions.setdefault(version, []).append((f"{path}.spec.containers[0].image", image))
        autoscaler_image = (view.spec.get("autoscalerOptions") or {}).get("image")
        if view.autoscaling and autoscaler_image and (v := facts.image_ray_version(str(autoscaler_image))):
            versions.setdefault(v, []).append(("spec.autoscalerOptions.image", str(autoscaler_image)))
        if len(versions) > 1:
            yield finding(
                VERSION_MISMATCH,
                cluster=view.ref,
                obj=view.ref,
                severity="warning",
                title=f"Ray versions differ across the cluster: {', '.join(sorted(versions))}",
                evidence=[
                    field_evidence(view.ref, p, img, "cr.spec") for v in sorted(versions) for p, img in versions[v]
                ],
                explanation='Ray nodes refuse to join a cluster of another Ray (or Python) version: "RuntimeError: '
                'Version mismatch: The cluster was started with: Ray: ...".',
                remediation=[
                    "Use one image (same Ray and Python version, patch included) for head, workers and autoscaler."
                ],
            )
        ray_version = view.spec.get("rayVersion")
        head_image = str(facts.ray_container(facts.pod_spec(view.head_template)).get("image") or "")
        head_version = facts.image_ray_version(head_image)
        if ray_version and head_version and str(ray_version) != head_version:
            yield finding(
                VERSION_DRIFT,
                cluster=view.ref,
                obj=view.ref,
                severity="warning",
                title=f"spec.rayVersion is {ray_version} but the head image runs Ray {head_version}",
                evidence=[
                    field_evidence(view.ref, "spec.rayVersion", ray_version, "cr.spec"),
                    field_evidence(
                        view.ref, "spec.headGroupSpec.template.spec.containers[0].image", head_image, "cr.spec"
                    ),
                ],
                explanation="KubeRay picks the probes (exec before 2.53, HTTP from 2.53), the autoscaler version and "
                "auth validation from spec.rayVersion, so a wrong value gives wrong probes or errors.",
                remediation=[f'Set spec.rayVersion: "{head_version}".'],
            )


def _own_shm(spec: Mapping[str, Any], container: Mapping[str, Any]) -> tuple[int, str, Any] | None:
    """The /dev/shm the Ray container mounts itself (KubeRay then adds no ``shared-mem`` of the memory limit's size):
    its index in volumeMounts, its volume's name and the volume's ``emptyDir.sizeLimit``, when it is a memory
    emptyDir with one (what decides the tmpfs's size)."""
    volumes = {str(v.get("name")): v for v in spec.get("volumes") or [] if isinstance(v, Mapping)}
    for index, mount in enumerate(container.get("volumeMounts") or []):
        if (
            not isinstance(mount, Mapping)
            or str(mount.get("mountPath") or "").rstrip("/") != c.SHARED_MEMORY_MOUNT_PATH
        ):
            continue
        empty = (volumes.get(str(mount.get("name"))) or {}).get("emptyDir")
        if isinstance(empty, Mapping) and empty.get("medium") == "Memory" and empty.get("sizeLimit") is not None:
            return index, str(mount.get("name")), empty["sizeLimit"]
    return None


def _store_above_own_shm(
    ref: ObjectRef, group: str, path: str, *, params: Mapping[str, Any], memory: Any, own: tuple[int, str, Any]
) -> Iterator[Finding]:
    """Ray's own rule (c.RAY_DEFAULT_OBJECT_STORE_MEMORY_PROPORTION): the store goes to /tmp when /dev/shm cannot
    hold it. Without object-store-memory the store is a share of the memory Ray finds available (at most the limit),
    so only a /dev/shm under half that share is called too small."""
    index, volume, size_limit = own
    shm = facts.quantity(size_limit)
    explicit = facts.quantity(params.get("object-store-memory"))
    share = memory.value * c.RAY_DEFAULT_OBJECT_STORE_MEMORY_PROPORTION
    if shm is None or (shm.value >= explicit.value if explicit is not None else shm.value >= share / 2):
        return
    store = (
        f"object-store-memory {params.get('object-store-memory')}"
        if explicit is not None
        else f"Ray's default object store (about {share / 2**20:.0f}Mi: "
        f"{c.RAY_DEFAULT_OBJECT_STORE_MEMORY_PROPORTION:.0%} of the memory limit)"
    )
    yield finding(
        SHM_TOO_SMALL,
        cluster=ref,
        obj=ref,
        severity="warning",
        title=f"Group {group} mounts its own /dev/shm ({volume}, {size_limit}), smaller than {store}: Ray keeps "
        "the object store in /tmp",
        evidence=[
            field_evidence(
                ref, f"{path}.spec.containers[0].volumeMounts[{index}]", c.SHARED_MEMORY_MOUNT_PATH, "cr.spec"
            ),
            field_evidence(ref, f"{path}.spec.volumes[{volume}].emptyDir.sizeLimit", size_limit, "cr.spec"),
        ],
        explanation="KubeRay adds its shared-mem volume (sized to the memory limit) only when nothing is mounted at "
        "/dev/shm. Ray keeps the object store in /dev/shm only when it holds the whole store; otherwise it uses /tmp "
        '("WARNING: The object store is using /tmp instead of /dev/shm" in the container\'s log): every object put '
        "or read goes through the disk.",
        remediation=[
            f"Remove the {volume} volume at /dev/shm (KubeRay then mounts one the size of the memory limit), or raise "
            "its sizeLimit above the object store, or set rayStartParams object-store-memory below it."
        ],
    )


@checker(GPU_NOT_ADVERTISED, SHM_TOO_SMALL)
def check_resources(snap: Snapshot) -> Iterator[Finding]:
    for view in facts.cluster_views(snap):
        params_of: dict[str, Mapping[str, Any]] = {c.HEAD_GROUP_NAME: view.head_spec.get("rayStartParams") or {}}
        resources_of: dict[str, Mapping[str, Any]] = {c.HEAD_GROUP_NAME: view.head_spec.get("resources") or {}}
        for worker_group in view.groups:
            params_of[worker_group.name] = worker_group.spec.get("rayStartParams") or {}
            resources_of[worker_group.name] = worker_group.spec.get("resources") or {}
        for group, path, template in view.templates():
            container = facts.ray_container(facts.pod_spec(template))
            limits = (container.get("resources") or {}).get("limits") or {}
            params = params_of.get(group, {})
            odd = [
                k
                for k in limits
                if "gpu" in str(k).lower()
                and not is_gpu_resource_name(str(k))
                and str(k) not in c.CUSTOM_ACCELERATOR_RAY_RESOURCES
            ]
            if odd and "num-gpus" not in params and "GPU" not in resources_of.get(group, {}):
                yield finding(
                    GPU_NOT_ADVERTISED,
                    cluster=view.ref,
                    obj=view.ref,
                    severity="warning",
                    title=f"Group {group} asks for {', '.join(odd)}, which Ray does not count as GPUs",
                    evidence=[
                        field_evidence(view.ref, f"{path}.spec.containers[0].resources.limits", limits, "cr.spec")
                    ],
                    explanation="KubeRay sets --num-gpus from limits named *gpu only; tasks asking for GPUs stay "
                    "pending although the Pods got the devices.",
                    remediation=['Set rayStartParams num-gpus, or the group\'s resources: {GPU: "1"}.'],
                )
            store = facts.quantity(params.get("object-store-memory"))
            memory = facts.quantity(limits.get("memory")) or facts.quantity(
                ((container.get("resources") or {}).get("requests") or {}).get("memory")
            )
            if (own := _own_shm(facts.pod_spec(template), container)) is not None and memory is not None:
                yield from _store_above_own_shm(view.ref, group, path, params=params, memory=memory, own=own)
            elif store is not None and memory is not None and store.value > memory.value:
                yield finding(
                    SHM_TOO_SMALL,
                    cluster=view.ref,
                    obj=view.ref,
                    severity="warning",
                    title=f"Group {group}: object-store-memory {params.get('object-store-memory')} exceeds the "
                    f"container memory ({limits.get('memory') or 'request'}) that sizes /dev/shm",
                    evidence=[
                        field_evidence(
                            view.ref,
                            f"{path.rsplit('.template', 1)[0]}.rayStartParams.object-store-memory",
                            params.get("object-store-memory"),
                            "cr.spec",
                        ),
                        field_evidence(
                            view.ref, f"{path}.spec.containers[0].resources", container.get("resources"), "cr.spec"
                        ),
                    ],
                    explanation="KubeRay sizes the /dev/shm emptyDir by the memory limit; Ray refuses or falls back "
                    "to /tmp (slow) when the object store does not fit.",
                    remediation=["Lower object-store-memory below the memory limit, or raise the limit."],
                )
