from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from raykube.waiting import NotYet, WaitTimeout, wait_for


async def test_returns_the_first_truthy_value() -> None:
    answers = iter([None, NotYet("warming up"), 0, "ready"])
    assert await wait_for(lambda: next(answers), 5, interval=0.001) == "ready"


async def test_accepts_async_predicates() -> None:
    calls = 0

    async def predicate() -> int | None:
        nonlocal calls
        calls += 1
        return calls if calls == 3 else None

    assert await wait_for(predicate, 5, interval=0.001) == 3


async def test_timeout_reports_what_it_waited_for_and_the_last_answer() -> None:
    with pytest.raises(WaitTimeout) as caught:
        await wait_for(lambda: NotYet("2 of 3 pods ready"), 0.05, what="pods", interval=0.01)
    assert "waiting for pods" in str(caught.value)
    assert "2 of 3 pods ready" in str(caught.value)
    assert isinstance(caught.value, TimeoutError)


async def test_predicate_errors_propagate_at_once() -> None:
    def broken() -> None:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        await wait_for(broken, 5)


async def test_rejects_a_non_positive_timeout() -> None:
    with pytest.raises(ValueError, match="timeout"):
        await wait_for(lambda: True, 0)


@given(st.text(min_size=1))
def test_not_yet_is_always_falsy_and_shows_its_reason(reason: str) -> None:
    answer = NotYet(reason)
    assert not answer
    assert repr(answer) == reason
