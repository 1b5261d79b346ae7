"""The one Kubernetes layer, at the bottom of raykube: everything that talks to an API server, and nothing else.

The operator's runtime, the controllers' tests, the doctor's live gatherer, the sandbox (its provisioner and the
process kubelet) and the CLI all reach Kubernetes through these modules, so there is one client, one informer and one
event recorder to get right:

```
resources.py  Resource: a type and how to address it; the built-in resources raykube touches
errors.py     ApiError (a Status from the API server), OutsideRbac
rbac.py       Rule: an RBAC PolicyRule, and whether a set of rules allows a request
client.py     Kube: dict-native async client (every verb through one path: RBAC check, QPS/burst, retry, observer)
config.py     connect(): kubeconfig or in-cluster credentials (lightkube's config) into an httpx2 client
decode.py     msgspec JSON decoding and encoding; the slim structs that skip managedFields
ratelimit.py  TokenBucket (client-go's QPS/burst), Retry-After
podexec.py    exec into a Pod: the WebSocket channels and the result
transport.py  AiohttpTransport: httpx2's API sent on aiohttp's connection pool and HTTP parser (the client's CPU);
              Direct: JSON requests and watches on the same session without httpx2's objects (the hot path)
informer.py   Informer (list + watch, bookmarks, 410 relist, idle rewatch, label indexes) and ObjectCache
events.py     EventRecorder: core/v1 (the controllers, as KubeRay; the kubelet) or events.k8s.io/v1, series, spam filter
objects.py    metadata helpers (name, namespace, labels, owner references, deletion) over plain dicts
times.py      Kubernetes time stamps: Time, MicroTime, parsing
fake.py       FakeKube: an in-memory API server for reconcile table tests (the Api and Cache protocols)
```

It imports nothing else from raykube: ``api`` and everything above may import it.
"""
