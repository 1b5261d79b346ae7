"""Scale expectations: remember the Pods this operator just created or deleted until the cache has seen it.

The informer cache lags the API server by a few milliseconds to seconds. Without this, a reconcile that runs right
after creating a worker would not see it in the cache and create another: duplicates. KubeRay keeps the same
bookkeeping (``rayClusterScaleExpectation``) per cluster for the head and for each worker group:

* after a **create**, the group is blocked until the new Pod is in the cache (or 30 s have passed, in case the watch
  event was lost; the next relist repairs the cache);
* after a **delete**, until the Pod is gone from the cache.

While a group is blocked its scaling is skipped and the cluster is requeued; other groups carry on. Everything is in
memory: after an operator restart the cache is freshly listed, so there is nothing to expect.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

CREATE_TIMEOUT = 30.0

ClusterKey = tuple[str, str]  # (namespace, cluster name)


@dataclass
class _Group:
    creates: dict[str, float] = field(default_factory=dict)  # pod name -> when it was created
    deletes: set[str] = field(default_factory=set)


class ScaleExpectations:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._clusters: dict[ClusterKey, dict[str, _Group]] = {}

    def _group(self, cluster: ClusterKey, group: str) -> _Group:
        return self._clusters.setdefault(cluster, {}).setdefault(group, _Group())

    def expect_create(self, cluster: ClusterKey, group: str, pod: str) -> None:
        self._group(cluster, group).creates[pod] = self.clock()

    def expect_delete(self, cluster: ClusterKey, group: str, pod: str) -> None:
        entry = self._group(cluster, group)
        entry.creates.pop(pod, None)
        entry.deletes.add(pod)

    def satisfied(self, cluster: ClusterKey, group: str, cached_pods: Collection[str]) -> bool:
        """Whether ``group`` may be scaled, given the names of its Pods in the cache now."""
        groups = self._clusters.get(cluster)
        entry = groups.get(group) if groups else None
        if entry is None:
            return True
        now = self.clock()
        entry.creates = {
            pod: at for pod, at in entry.creates.items() if pod not in cached_pods and now - at < CREATE_TIMEOUT
        }
        entry.deletes = {pod for pod in entry.deletes if pod in cached_pods}
        if entry.creates or entry.deletes:
            return False
        self.forget(cluster, group)
        return True

    def forget(self, cluster: ClusterKey, group: str | None = None) -> None:
        """Drop expectations for a cluster (deleted, or all its Pods recreated) or for one of its groups."""
        if group is None:
            self._clusters.pop(cluster, None)
            return
        groups = self._clusters.get(cluster)
        if groups is not None:
            groups.pop(group, None)
            if not groups:
                del self._clusters[cluster]

    def pending(self, cluster: ClusterKey) -> int:
        return sum(len(g.creates) + len(g.deletes) for g in self._clusters.get(cluster, {}).values())
