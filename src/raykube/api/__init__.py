"""Typed models of the ``ray.io`` custom resources, their validation and CRD generation (issue 4).

Above the kube layer (whose Resource addresses the kinds) and below everything else of the operator.
"""
