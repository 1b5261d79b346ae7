"""What a RayService's Serve applications ask for and what Serve said of them: the application's ``runtime_env`` in
``spec.serveConfigV2`` (Ray Serve's config file, YAML), and whether a failed application's message is Serve's
runtime-env setup failure (``RuntimeEnvSetupError``: a ``working_dir``/``py_modules`` download, a ``pip``/``uv``
install, a ``conda`` env that could not be made; ray-project/ray#26209, ray-project/kuberay#2072)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

import yaml

# Ray's own words (Ray 2.x: ray.exceptions.RuntimeEnvSetupError, the runtime env agent, the Serve controller).
RUNTIME_ENV_FAILURE: Final = re.compile(
    r"RuntimeEnvSetupError|[Ff]ailed to set ?up runtime env|runtime_?env setup failed|"
    r"its associated runtime env failed to be created"
)


def runtime_env_failed(message: str) -> bool:
    return bool(RUNTIME_ENV_FAILURE.search(message))


def application_runtime_env(service: Mapping[str, Any], app_name: str) -> Mapping[str, Any] | None:
    """The ``runtime_env`` of application ``app_name`` in ``spec.serveConfigV2`` (None when the config does not parse
    or the application has none)."""
    text = (service.get("spec") or {}).get("serveConfigV2")
    try:
        config = yaml.safe_load(text) if isinstance(text, str) else None
    except yaml.YAMLError:
        return None
    if not isinstance(config, Mapping):
        return None
    for app in config.get("applications") or []:
        if isinstance(app, Mapping) and str(app.get("name")) == app_name:
            env = app.get("runtime_env")
            return env if isinstance(env, Mapping) and env else None
    return None
