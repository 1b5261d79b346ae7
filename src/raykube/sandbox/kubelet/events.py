"""Events the process runtime records about Pods, as a kubelet does (``source.component: kubelet``).

Repeats of the same reason and message for the same object are folded into one Event whose ``count`` grows, the way
client-go's event correlator does, so a crash-looping container does not flood the namespace.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from raykube.kube.client import Kube
from raykube.kube.errors import ApiError
from raykube.kube.resources import CORE_EVENTS
from raykube.sandbox.kubelet.nstools import now_rfc3339

log = logging.getLogger("raykube.sandbox.kubelet.events")


class Recorder:
    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self._seen: dict[tuple[str, ...], tuple[str, int, float]] = {}

    async def record(
        self,
        pod: Mapping[str, Any],
        node: str,
        kind: str,
        reason: str,
        message: str,
        *,
        field_path: str | None = None,
    ) -> None:
        meta = pod["metadata"]
        namespace = str(meta["namespace"])
        key = (namespace, str(meta["uid"]), field_path or "", reason, message)
        now = now_rfc3339()
        try:
            if key in self._seen:
                name, count, _ = self._seen[key]
                await self.kube.patch(
                    CORE_EVENTS, name, {"count": count + 1, "lastTimestamp": now[:19] + "Z"}, namespace
                )
                self._seen[key] = (name, count + 1, time.monotonic())
                return
            involved: dict[str, Any] = {
                "apiVersion": "v1",
                "kind": "Pod",
                "namespace": namespace,
                "name": meta["name"],
                "uid": meta["uid"],
                "resourceVersion": meta.get("resourceVersion"),
            }
            if field_path:
                involved["fieldPath"] = field_path
            body = {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"generateName": f"{meta['name']}.", "namespace": namespace},
                "involvedObject": involved,
                "reason": reason,
                "message": message,
                "type": kind,
                "source": {"component": "kubelet", "host": node},
                "reportingComponent": "kubelet",
                "reportingInstance": node,
                "firstTimestamp": now[:19] + "Z",
                "lastTimestamp": now[:19] + "Z",
                "count": 1,
            }
            created = await self.kube.create(CORE_EVENTS, body, namespace)
            self._seen[key] = (created["metadata"]["name"], 1, time.monotonic())
        except ApiError as exc:
            if exc.code == 404 and key in self._seen:
                del self._seen[key]
            log.warning("recording event %s on %s/%s failed: %s", reason, namespace, meta.get("name"), exc)
        except Exception as exc:  # events are best effort, as in the kubelet
            log.warning("recording event %s failed: %s", reason, exc)

    def forget(self, uid: str) -> None:
        self._seen = {k: v for k, v in self._seen.items() if k[1] != uid}
