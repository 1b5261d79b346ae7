"""The one way raykube waits: poll observable state until a predicate holds, or fail with what was seen last.

Tests, the sandbox and (later) the demo all wait through :func:`wait_for`; nothing sleeps a fixed time hoping
that the world has moved on.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar, overload

T = TypeVar("T")


class NotYet:
    """A falsy answer from a predicate that says why the wait goes on; a timeout reports the last one."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return self.reason


class WaitTimeout(TimeoutError):
    """The predicate did not hold in time. ``last`` is what it returned last (falsy), for the error report."""

    def __init__(self, what: str, timeout: float, last: object) -> None:
        detail = f"; last seen: {last!r}" if last not in (None, False) else ""
        super().__init__(f"timed out after {timeout:g}s waiting for {what}{detail}")
        self.what = what
        self.timeout = timeout
        self.last = last


@overload
async def wait_for(
    predicate: Callable[[], Awaitable[T | NotYet | None]],
    timeout: float,
    *,
    what: str | None = None,
    interval: float = 0.1,
    max_interval: float = 1.0,
) -> T: ...


@overload
async def wait_for(
    predicate: Callable[[], T | NotYet | None],
    timeout: float,
    *,
    what: str | None = None,
    interval: float = 0.1,
    max_interval: float = 1.0,
) -> T: ...


async def wait_for(
    predicate: Callable[[], object],
    timeout: float,
    *,
    what: str | None = None,
    interval: float = 0.1,
    max_interval: float = 1.0,
) -> object:
    """Call ``predicate`` (sync or async) until it returns a truthy value, and return that value.

    The poll interval starts at ``interval`` and grows by half each round up to ``max_interval``, so short waits
    stay fast and long waits stay cheap. Exceptions from the predicate propagate at once: a predicate that wants to
    tolerate a transient error catches it itself and returns ``None``. A predicate returns :class:`NotYet` to say
    why it is not done; on timeout :class:`WaitTimeout` carries the last such answer, so a failure says what the
    world looked like.
    """
    if timeout <= 0:
        raise ValueError("timeout must be positive")
    description = what or str(getattr(predicate, "__name__", "condition"))
    deadline = time.monotonic() + timeout
    delay = interval
    last: object = None
    while True:
        result = predicate()
        if inspect.isawaitable(result):
            result = await result
        if result and not isinstance(result, NotYet):
            return result
        last = result
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise WaitTimeout(description, timeout, last)
        await asyncio.sleep(min(delay, remaining))
        delay = min(delay * 1.5, max_interval)
