"""The vocabulary that chains findings: each token names one link of a RayCluster's dependency chain that is broken.

A rule puts tokens in a finding's ``symptoms`` (what it observed to be broken) and ``effects`` (what it breaks);
:mod:`raykube.doctor.correlate` links a finding to every earlier finding whose effects meet its symptoms. ``C`` below
is a cluster key ``<namespace>/<name>``, ``P`` a Pod key ``<namespace>/<name>``.

=========================  ===========================================================================================
token                      broken link
=========================  ===========================================================================================
``reconcile:C``            the operator reconciles the RayCluster (status written, observedGeneration current)
``create-head:C``          the head Pod exists
``create-workers:C/G``     worker group G has all its Pods
``create-service:C``       the head Service exists
``pod-run:P``              the Pod is scheduled and its containers started
``pod-ready:P``            the Pod is Ready
``pod-mount:P``            the Pod's volumes attach and mount
``pod-image:P``            the Pod's images pull
``pod-config:P``           the kubelet can build the containers' env (ConfigMaps, Secrets, keys)
``head:C``                 the head Pod is Running and Ready
``workers:C/G``            worker group G has its desired number of Ready Pods
``gcs:C``                  workers can reach the GCS on the head (Service DNS name → Ready head)
``endpoints:C``            the head Service's EndpointSlices hold the head Pod's address
``dashboard:C``            ``kubectl port-forward svc/<head-svc> 8265`` (or an Ingress) reaches the dashboard
``cluster:C``              the RayCluster is ready (every Pod Running and Ready)
``runs-on:C``              what runs on the RayCluster can (a RayJob's job, a RayService's Serve applications)
``ray-start:P``            ``ray start`` in the Pod keeps running (it does not exit, its GCS or raylet does not die)
``ray-node:P``             the Pod's raylet is a live node of the Ray cluster (``ray status``)
``dns:C/G``                the Pods of group G (``headgroup`` for the head) can resolve names (the head Service's)
``ray-network:C``          the cluster's Ray Pods reach each other on every port Ray uses
``job-dashboard:J``        RayJob J's status checks (the operator) and its submitter reach the head's dashboard
``job-app:J``              RayJob J's own code runs to the end (what it calls, the Kubernetes API among them, answers)
=========================  ===========================================================================================
"""

from __future__ import annotations


def reconcile(cluster: str) -> str:
    return f"reconcile:{cluster}"


def create_head(cluster: str) -> str:
    return f"create-head:{cluster}"


def create_workers(cluster: str, group: str) -> str:
    return f"create-workers:{cluster}/{group}"


def create_service(cluster: str) -> str:
    return f"create-service:{cluster}"


def pod_run(pod: str) -> str:
    return f"pod-run:{pod}"


def pod_ready(pod: str) -> str:
    return f"pod-ready:{pod}"


def head(cluster: str) -> str:
    return f"head:{cluster}"


def workers(cluster: str, group: str) -> str:
    return f"workers:{cluster}/{group}"


def gcs(cluster: str) -> str:
    return f"gcs:{cluster}"


def endpoints(cluster: str) -> str:
    return f"endpoints:{cluster}"


def dashboard(cluster: str) -> str:
    return f"dashboard:{cluster}"


def cluster_ready(cluster: str) -> str:
    return f"cluster:{cluster}"


def runs_on(cluster: str) -> str:
    """What runs on the RayCluster (a RayJob's job, a RayService's Serve applications) can run."""
    return f"runs-on:{cluster}"


def ray_start(pod: str) -> str:
    return f"ray-start:{pod}"


def ray_node(pod: str) -> str:
    return f"ray-node:{pod}"


def dns(cluster: str, group: str) -> str:
    """The Pods of group ``group`` can resolve names."""
    return f"dns:{cluster}/{group}"


def ray_network(cluster: str) -> str:
    """The cluster's Ray Pods reach each other on every port Ray uses."""
    return f"ray-network:{cluster}"


def job_dashboard(job: str) -> str:
    """The operator's status checks and the submitter of the RayJob ``<namespace>/<name>`` reach the dashboard."""
    return f"job-dashboard:{job}"


def job_app(job: str) -> str:
    """The code of the RayJob ``<namespace>/<name>`` runs to the end: what it calls answers it."""
    return f"job-app:{job}"


def pod_down(pod: str) -> frozenset[str]:
    """A Pod that does not run is not Ready either."""
    return frozenset({pod_run(pod), pod_ready(pod)})


def pod_mount(pod: str) -> str:
    """The Pod's volumes attach and mount."""
    return f"pod-mount:{pod}"


def pod_image(pod: str) -> str:
    """The Pod's images pull."""
    return f"pod-image:{pod}"


def pod_config(pod: str) -> str:
    """The kubelet can build the Pod's containers' configuration (env from ConfigMaps and Secrets)."""
    return f"pod-config:{pod}"
