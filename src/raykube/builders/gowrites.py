"""Objects as KubeRay writes them: through its Go structs, so what the API server stores is Go's ``json.Marshal`` of
the object decoded into ``rayv1.RayCluster``, ``rayv1.RayJob`` or ``rayv1.RayService`` (KubeRay v1.7.0), not the
object as read.

Where KubeRay writes a whole object, raykube writes the same bytes' worth (:func:`raykube.golang.gojson.as_go_writes`,
checked against Go by tests/unit/test_kuberay_roundtrip_v170.py):

* the Update that adds a finalizer (RayJob ``ray.io/rayjob-finalizer``, RayService ``ray.io/rayservice-finalizer``,
  RayCluster ``ray.io/gcs-ft-redis-cleanup-finalizer``): the spec gains the structs Go always writes
  (``template.metadata: {}``, ``containers[*].resources: {}``, ``scaleStrategy: {}`` ...) and loses ``false``/``""``
  omitempty fields, so ``metadata.generation`` (and every ``observedGeneration`` after) becomes 2 exactly when
  KubeRay's does (inventory RS-5; the RayJob and RayCluster controllers do the same);
* the RayClusters KubeRay creates for RayJobs and RayServices, and its Updates of them;
* the status Updates of RayJobs and RayServices (``jobStatus: ""`` omitted, ``rayJobInfo: {}`` written, ...).

Nothing stored is lost: a key the Go types do not know is put back as read (``keep_unknown``). With KubeRay v1.7.0's
CRDs (what raykube installs) the API server prunes every such key before storing, so there is none and the body is
exactly KubeRay's; under a newer CRD (a newer Kubernetes Pod field in a template) KubeRay v1.7.0 would silently
drop the user's field on its finalizer Update, and raykube keeps it: losing stored user data is worse than differing
from KubeRay on a CRD it does not ship. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from raykube.golang import gojson, gostructs


def _field_type(kind: str, field: str) -> str:
    return next(expr for name, expr, _ in gostructs.STRUCTS[gostructs.ROOTS[kind]] if name == field)


def as_kuberay_writes(kind: str, obj: Mapping[str, Any]) -> dict[str, Any]:
    """The whole object ``obj`` of ``kind`` (RayCluster, RayJob, RayService) as KubeRay's Go types write it, with
    the fields they do not know kept. Without a status when ``obj`` has none: Go writes its zero status (``status``
    is a struct), which the main resource ignores on create and update."""
    written: dict[str, Any] = gojson.as_go_writes(gostructs.ROOTS[kind], obj, keep_unknown=True)
    if "status" not in obj:
        written.pop("status", None)
    return written


def status_as_kuberay_writes(kind: str, status: Mapping[str, Any]) -> dict[str, Any]:
    """A ``status`` of ``kind`` as KubeRay's status Update writes it."""
    written: dict[str, Any] = gojson.as_go_writes(_field_type(kind, "status"), status, keep_unknown=True)
    return written


def finalizer_update(kind: str, obj: Mapping[str, Any], finalizer: str) -> dict[str, Any]:
    """The body of KubeRay's Update adding ``finalizer`` to ``obj`` (``controllerutil.AddFinalizer``, then
    ``r.Update`` of the Go object): the object as Go writes it, the finalizer appended, the ``resourceVersion`` read
    kept (a stale read gets 409 Conflict, as KubeRay's). ``status`` is left out: the main resource ignores it."""
    body = as_kuberay_writes(kind, {key: value for key, value in obj.items() if key != "status"})
    meta = body.setdefault("metadata", {})
    finalizers = list(meta.get("finalizers") or [])
    if finalizer not in finalizers:
        finalizers.append(finalizer)
    meta["finalizers"] = finalizers
    return body
