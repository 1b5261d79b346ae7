"""The incremental upgrade's Gateway API objects, as KubeRay v1.7.0 ``rayservice_controller.go`` builds and compares
them (``createGateway``, ``createHTTPRoute``; ``utils.IsGatewayEqual``, ``utils.IsHTTPRouteEqual``,
``utils.GetWeightsFromHTTPRoute``, ``utils.IsGatewayReady``, ``utils.IsHTTPRouteReady``; the names of
``common.RayServiceGatewayNamespacedName`` / ``RayServiceHTTPRouteNamespacedName``).
"""

from __future__ import annotations

from raykube.api.resources import RayService
from raykube.builders.rayservice.common import _name

__all__ = ["gateway_name", "httproute_name"]


def gateway_name(rayservice: RayService) -> str:
    """``<rs>-gateway``."""
    return f"{_name(rayservice)}-gateway"


def httproute_name(rayservice: RayService) -> str:
    """``<rs>-httproute``."""
    return f"{_name(rayservice)}-httproute"
