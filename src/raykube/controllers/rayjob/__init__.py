"""The RayJob controller: run one Ray job on a RayCluster it creates (or an existing one), as KubeRay v1.6.1
``ray-operator/controllers/ray/rayjob_controller.go`` does.

* :mod:`~raykube.controllers.rayjob.reconciler`: the state machine over ``status.jobDeploymentStatus`` (its docstring
  lists the states), the deadlines, the status write, and the deletion of a RayJob;
* :mod:`~raykube.controllers.rayjob.children`: what the RayJob creates: its RayCluster, ``<rayjob>-head-svc``, the
  K8sJobMode submitter Job, the batch scheduler's objects;
* :mod:`~raykube.controllers.rayjob.submission`: following the submission: the submitter (Job or sidecar container),
  the Ray job's info from the dashboard (HTTPMode submits it there), and what they mean for the status;
* :mod:`~raykube.controllers.rayjob.cleanup`: what a RayJob deletes between attempts, on suspend, and once its job has
  ended;
* :mod:`~raykube.controllers.rayjob.context`: one pass's :class:`JobContext`, the state and reason names, the errors.
"""

from raykube.controllers.rayjob.context import CONTROLLER, REQUEUE, JobContext, RayJobError
from raykube.controllers.rayjob.reconciler import RayJobReconciler, registration

__all__ = ["CONTROLLER", "REQUEUE", "JobContext", "RayJobError", "RayJobReconciler", "registration"]
