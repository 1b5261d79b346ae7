"""Operator logs: one JSON object per line (KubeRay's default ``--log-stdout-encoder json``) or a console format,
with the keys KubeRay's logs carry for a reconcile (``RayCluster``, ``namespace``, ``reconcileID``) added to every
line logged while that reconcile runs."""

from __future__ import annotations

import contextvars
import json
import logging
import sys
from pathlib import Path
from typing import Any, ClassVar

reconcile_context: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar(
    "reconcile_context", default=None
)


class _ContextFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        for key, value in (reconcile_context.get() or {}).items():
            setattr(record, key, value)
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line; extra attributes (RayCluster, namespace, reconcileID, ...) become keys."""

    _STANDARD: ClassVar[frozenset[str]] = frozenset(
        [*vars(logging.LogRecord("", 0, "", 0, "", None, None)), "message", "asctime"]
    )

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S%z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        entry.update({k: v for k, v in vars(record).items() if k not in self._STANDARD})
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


class ConsoleFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        context = reconcile_context.get() or {}
        suffix = " ".join(f"{k}={v}" for k, v in context.items())
        base = f"{self.formatTime(record, '%H:%M:%S')} {record.levelname:<7} {record.name}: {record.getMessage()}"
        return f"{base}  {suffix}" if suffix else base


def configure(stdout_encoder: str = "json", file_path: str = "", file_encoder: str = "json") -> None:
    """Route all logging to stdout (and a file) in the chosen encodings."""
    formatters = {"json": JsonFormatter, "console": ConsoleFormatter}
    handlers: list[logging.Handler] = []
    stream = logging.StreamHandler(sys.stdout)
    stream.setFormatter(formatters[stdout_encoder]())
    handlers.append(stream)
    if file_path:
        Path(file_path).parent.mkdir(parents=True, exist_ok=True)
        to_file = logging.FileHandler(file_path)
        to_file.setFormatter(formatters[file_encoder]())
        handlers.append(to_file)
    for handler in handlers:
        handler.addFilter(_ContextFilter())
    logging.basicConfig(level=logging.INFO, handlers=handlers, force=True)
    for noisy in ("httpx2", "httpcore2"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
