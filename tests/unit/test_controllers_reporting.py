"""``reported``: the one way a controller sends a write and reports it as Events (``raykube.controllers.base``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from raykube.controllers.base import reported, sent
from raykube.kube.errors import ApiError

OBJ = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "demo", "namespace": "team"}}
EXISTS = ApiError(409, "AlreadyExists", 'pods "demo-head" already exists')
FORBIDDEN = ApiError(403, "Forbidden", "pods is forbidden: exceeded quota: compute, requested: cpu=2")


@dataclass
class Recorder:
    events: list[tuple[str, str, str, str]] = field(default_factory=list)

    def event(
        self, regarding: Mapping[str, Any], type_: str, reason: str, action: str, note: str, *, field_path: str = ""
    ) -> None:
        assert regarding is OBJ
        self.events.append((type_, reason, action, note))


async def answer(value: Any) -> Any:
    return value


async def fail(exc: Exception) -> Any:
    raise exc


class PassFailed(Exception):
    pass


async def test_success_is_a_normal_event_and_returns_the_answer() -> None:
    recorder = Recorder()
    created = {"metadata": {"name": "demo-head-x7k2p"}}
    got = await reported(
        recorder,
        OBJ,
        "Create",
        answer(created),
        done=("CreatedHeadPod", "Created head Pod team/demo-head-x7k2p"),
        failed=("FailedToCreateHeadPod", "Failed to create head Pod team/demo-head-"),
    )
    assert got is created
    assert recorder.events == [("Normal", "CreatedHeadPod", "Create", "Created head Pod team/demo-head-x7k2p")]


async def test_the_normal_note_can_come_from_the_answer() -> None:
    recorder = Recorder()
    await reported(
        recorder,
        OBJ,
        "Create",
        answer({"metadata": {"name": "demo-head-x7k2p"}}),
        done=lambda pod: ("CreatedHeadPod", f"Created head Pod team/{pod['metadata']['name']}"),
        failed=None,
    )
    assert recorder.events == [("Normal", "CreatedHeadPod", "Create", "Created head Pod team/demo-head-x7k2p")]


async def test_no_done_no_event() -> None:
    recorder = Recorder()
    assert await reported(recorder, OBJ, "Create", answer({"a": 1}), done=None, failed=None) == {"a": 1}
    assert recorder.events == []


async def test_a_tolerated_error_is_none_and_no_event() -> None:
    recorder = Recorder()
    got = await reported(
        recorder,
        OBJ,
        "Create",
        fail(EXISTS),
        done=("CreatedService", "Created service team/demo-head-svc"),
        failed=("FailedToCreateService", "Failed to create service team/demo-head-svc"),
        tolerate=lambda exc: exc.already_exists,
        raise_as=lambda note, exc: PassFailed(note),
    )
    assert got is None
    assert recorder.events == []


@pytest.mark.parametrize("sep", [", ", ": "])
async def test_another_error_is_a_warning_then_the_error_itself(sep: str) -> None:
    recorder = Recorder()
    with pytest.raises(ApiError) as raised:
        await reported(
            recorder,
            OBJ,
            "Update",
            fail(FORBIDDEN),
            done=("UpdatedService", "Updated the service team/demo-serve-svc"),
            failed=("FailedToUpdateService", "Failed to update the service team/demo-serve-svc"),
            sep=sep,
            tolerate=lambda exc: exc.already_exists,
        )
    assert raised.value is FORBIDDEN
    note = f"Failed to update the service team/demo-serve-svc{sep}{FORBIDDEN.message}"
    assert recorder.events == [("Warning", "FailedToUpdateService", "Update", note)]


async def test_raise_as_gets_the_warning_note_and_chains_the_error() -> None:
    recorder = Recorder()
    with pytest.raises(PassFailed) as raised:
        await reported(
            recorder,
            OBJ,
            "Delete",
            fail(FORBIDDEN),
            done=("DeletedRayCluster", "Deleted the RayCluster team/demo-abcde"),
            failed=("FailedToDeleteRayCluster", "Failed to delete the RayCluster team/demo-abcde"),
            sep=": ",
            raise_as=lambda note, exc: PassFailed(note),
        )
    note = f"Failed to delete the RayCluster team/demo-abcde: {FORBIDDEN.message}"
    assert str(raised.value) == note
    assert raised.value.__cause__ is FORBIDDEN
    assert recorder.events == [("Warning", "FailedToDeleteRayCluster", "Delete", note)]


async def test_an_error_without_a_message_ends_the_note_with_the_error() -> None:
    recorder = Recorder()
    bare = ApiError(500)
    with pytest.raises(ApiError):
        await reported(recorder, OBJ, "Create", fail(bare), done=None, failed=("Failed", "Failed to create x"))
    assert recorder.events == [("Warning", "Failed", "Create", f"Failed to create x, {bare}")]


async def test_without_failed_the_error_passes_without_an_event() -> None:
    recorder = Recorder()
    with pytest.raises(PassFailed, match="exceeded quota"):
        await reported(
            recorder, OBJ, "Create", fail(FORBIDDEN), done=None, failed=None, raise_as=lambda note, _: PassFailed(note)
        )
    assert recorder.events == []


async def test_other_exceptions_pass_untouched() -> None:
    recorder = Recorder()
    with pytest.raises(ValueError, match="boom"):
        await reported(
            recorder,
            OBJ,
            "Create",
            fail(ValueError("boom")),
            done=("Created", "Created x"),
            failed=("Failed", "Failed to create x"),
            tolerate=lambda exc: True,
            raise_as=lambda note, exc: PassFailed(note),
        )
    assert recorder.events == []


async def test_sent_tells_a_delete_that_went_through_from_a_tolerated_one() -> None:
    recorder = Recorder()
    went = await reported(
        recorder,
        OBJ,
        "Delete",
        sent(answer(None)),
        done=("DeletedRayCluster", "Deleted cluster team/demo"),
        failed=("FailedToDeleteRayCluster", "Failed to delete cluster team/demo"),
        tolerate=lambda exc: exc.not_found,
    )
    gone = await reported(
        recorder,
        OBJ,
        "Delete",
        sent(fail(ApiError(404, "NotFound", 'rayclusters.ray.io "demo" not found'))),
        done=("DeletedRayCluster", "Deleted cluster team/demo"),
        failed=("FailedToDeleteRayCluster", "Failed to delete cluster team/demo"),
        tolerate=lambda exc: exc.not_found,
    )
    assert went is True
    assert gone is None
    assert recorder.events == [("Normal", "DeletedRayCluster", "Delete", "Deleted cluster team/demo")]
