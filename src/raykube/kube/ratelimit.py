"""Client-side flow control as client-go's: the QPS/burst token bucket every request takes from, and the
``Retry-After`` wait of a 429 or 5xx answer (the API server's own rate limit, API Priority and Fairness).

Split from :mod:`raykube.kube.client`, whose :class:`~raykube.kube.client.Kube` holds the buckets (one, or one per
resource type) and sends a request again after :func:`retry_after`, up to :data:`MAX_RETRIES` times.
"""

from __future__ import annotations

import asyncio
import time

import httpx2

from raykube.kube.transport import Reply

# client-go's rest client: how often a request answered 429/5xx with Retry-After is sent again.
MAX_RETRIES = 10


def retry_after(response: httpx2.Response | Reply) -> float | None:
    """Seconds to wait before sending the request again, when the answer is 429 or 5xx with a ``Retry-After`` of
    whole seconds (client-go's ``checkWait``); None otherwise. A date or garbage is not a wait."""
    if response.status_code != 429 and response.status_code < 500:
        return None
    value = response.headers.get("Retry-After", "").strip()
    if not value.isdigit():
        return None
    return float(int(value))


class TokenBucket:
    """Client-side rate limit as client-go's: ``qps`` tokens a second, at most ``burst`` saved up."""

    def __init__(self, qps: float, burst: int) -> None:
        self.check(qps, burst)
        self.qps = qps
        self.burst = burst
        self._tokens = float(burst)
        self._stamp = time.monotonic()
        self._lock = asyncio.Lock()

    @staticmethod
    def check(qps: float, burst: int) -> None:
        """Refuse a limit no bucket can keep."""
        if qps <= 0 or burst < 1:
            raise ValueError(f"qps must be > 0 and burst >= 1 (got qps={qps}, burst={burst})")

    async def acquire(self) -> None:
        async with self._lock:
            now = time.monotonic()
            self._tokens = self._saved_at(now)
            self._stamp = now
            if self._tokens >= 1:
                self._tokens -= 1
                return
            wait = (1 - self._tokens) / self.qps
            self._tokens = 0.0
            self._stamp = now + wait
            await asyncio.sleep(wait)

    def saved(self) -> float:
        """Tokens saved up now (negative while callers wait for the next ones)."""
        return self._saved_at(time.monotonic())

    def _saved_at(self, now: float) -> float:
        return min(self.burst, self._tokens + (now - self._stamp) * self.qps)

    async def spare(self, reserve: float) -> None:
        """Wait until at least ``reserve`` tokens are saved up, taking none: for work that should only use what the
        bucket's own callers leave over (the operator's Events yield to its writes this way)."""
        reserve = min(reserve, self.burst)
        while (saved := self.saved()) < reserve:  # noqa: ASYNC110 - each wait is the refill time the bucket needs
            await asyncio.sleep((reserve - saved) / self.qps)
