"""The operator process that runs the controllers: the manager (informers per watched resource, event routing, work
queues, workers), leader election, metrics, the health and metrics server, logs, CRD installation and the Ray
dashboard client.

The Kubernetes client, informers, cache and event recorder it uses are ``raykube.kube``'s."""
