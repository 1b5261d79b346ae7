"""The RayService controller: Ray Serve applications on RayClusters it creates and upgrades, as KubeRay v1.7.0's
``ray-operator/controllers/ray/rayservice_controller.go`` does.

* :mod:`~raykube.controllers.rayservice.reconciler`: the pass (its docstring lists the steps), the clusters, the head
  Pods' serve label, the Serve applications, the head and serve Services and the status;
* :mod:`~raykube.controllers.rayservice.suspend`: ``spec.suspend``'s deletions (KubeRay v1.7.0);
* :mod:`~raykube.controllers.rayservice.upgrade`: the incremental upgrade's Gateway, HTTPRoute, per-cluster serve
  Services, rollback and ``target_capacity`` steps (KubeRay v1.7.0);
* :mod:`~raykube.controllers.rayservice.context`: one pass's :class:`ServiceContext`, the error, shared readers.
"""

from raykube.controllers.rayservice.context import CONTROLLER, REQUEUE, RayServiceError, ServiceContext
from raykube.controllers.rayservice.reconciler import (
    RayServiceReconciler,
    generation_labels_or_annotations_changed,
    registration,
)

__all__ = [
    "CONTROLLER",
    "REQUEUE",
    "RayServiceError",
    "RayServiceReconciler",
    "ServiceContext",
    "generation_labels_or_annotations_changed",
    "registration",
]
