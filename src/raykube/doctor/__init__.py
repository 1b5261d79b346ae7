"""``raykube doctor``: walks operator and RBAC → the RayCluster → Pods and scheduling → the head Service and its
EndpointSlices → ConfigMaps, Secrets, PVCs, and names the broken link that explains the rest.

Pipeline: :mod:`~raykube.doctor.gather` (or :mod:`~raykube.doctor.dump`) builds a
:class:`~raykube.doctor.snapshot.Snapshot`; the pure rules in :mod:`raykube.doctor.rules` turn it into findings;
:mod:`~raykube.doctor.correlate` links consequences to their causes; :mod:`~raykube.doctor.render` prints text or
``doctor.raykube.io/v1`` JSON. :mod:`~raykube.doctor.run` ties them together. See ``docs/doctor.md``.
"""
