"""Typed models of the ``ray.io`` custom resources, their validation and CRD generation (issue 4).

The bottom of the operator's layers: it imports nothing else from raykube.
"""
