"""The kubelet's ``EnsureImageExists`` for the containers of one Pod: the pull policy, the pull back-off, the pull
(which makes the image's venv, :mod:`~raykube.sandbox.kubelet.images`) and the kubelet's events about it."""

from __future__ import annotations

import time

from raykube.sandbox.kubelet import images
from raykube.sandbox.kubelet.podcontext import Container, PodContext


class ImageError(Exception):
    """No image to run a container with: the waiting ``reason`` (ErrImagePull, ImagePullBackOff, ErrImageNeverPull)
    and ``message`` its status shows."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message


class ImagePuller:
    """The images of one Pod's containers."""

    def __init__(self, ctx: PodContext) -> None:
        self.ctx = ctx
        self.pull_backoff = images.PullBackOff()  # the kubelet's is per node, keyed by Pod uid and image: the same
        self.pull_errors: dict[str, str] = {}  # image -> its last pull error, for the ImagePullBackOff message

    async def ensure(self, c: Container) -> images.Runnable:
        """The kubelet's ``EnsureImageExists``: the pull policy, the back-off, the pull (making the venv), with the
        kubelet's events (``Pulling``, ``Pulled``, ``Failed``, ``BackOff``, ``ErrImageNeverPull``). ImageError with
        the waiting reason and message when there is no image to run."""
        event = self.ctx.event
        reference = str(c.spec.get("image") or "")
        store = self.ctx.host.image_store
        parsed: images.Image | images.ImageNotFound
        try:
            parsed = images.parse(reference)
        except images.ImageNotFound as exc:
            parsed = exc
        image = None if isinstance(parsed, images.ImageNotFound) else parsed
        present = image is not None and store.present(image)
        policy = images.pull_policy(c.spec)
        if not images.should_pull(policy, present):
            if image is None or not present:
                message = f'Container image "{reference}" is not present with pull policy of Never'
                event("Warning", "ErrImageNeverPull", message, c)
                raise ImageError("ErrImageNeverPull", message)
            runnable = await store.ensure(image, lambda _: None)
            message = f'Container image "{reference}" already present on machine ({_mapping(runnable, [])})'
            return self._pulled(c, image, runnable, message)
        if self.pull_backoff.in_backoff(reference, time.monotonic()):
            message = f'Back-off pulling image "{reference}"'
            event("Normal", "BackOff", message, c)
            previous = self.pull_errors.get(reference)
            raise ImageError("ImagePullBackOff", f"{message}: {previous}" if previous else message)
        self.pull_errors.pop(reference, None)
        event("Normal", "Pulling", f'Pulling image "{reference}"', c)
        started = time.monotonic()
        notes: list[str] = []
        try:
            if isinstance(parsed, images.ImageNotFound):
                raise parsed
            runnable = await store.ensure(parsed, notes.append)
        except (images.ImageNotFound, images.InstallFailed) as exc:
            event("Warning", "Failed", f'Failed to pull image "{reference}": {exc}', c)
            self.pull_backoff.next(reference, time.monotonic())
            self.pull_errors[reference] = f"ErrImagePull: {exc}"
            raise ImageError("ErrImagePull", str(exc)) from exc
        self.pull_backoff.gc(time.monotonic())
        took = images.go_duration(time.monotonic() - started)
        message = (
            f'Successfully pulled image "{reference}" in {took} ({took} including waiting) '
            f"({_mapping(runnable, notes)})"
        )
        return self._pulled(c, parsed, runnable, message)

    def _pulled(self, c: Container, image: images.Image, runnable: images.Runnable, message: str) -> images.Runnable:
        self.ctx.host.new_venv(runnable.venv)
        self.ctx.event("Normal", "Pulled", message, c)
        if runnable.version != image.version:
            self.ctx.warn_once(
                "ImageVersionMapped",
                f'"{image.reference}" runs Ray {runnable.version}, the nearest version installable for Python '
                f"{images.python_version()} (Ray {image.version} is not)",
                c,
            )
        c.image_id = runnable.image_id
        return runnable


def _mapping(runnable: images.Runnable, notes: list[str]) -> str:
    """What the image runs as, for the ``Pulled`` event: the venv, and what differs from the real image."""
    extra = [n for n in notes if "nearest" in n]
    if runnable.image.note:
        extra.append(runnable.image.note)
    suffix = f"; {'; '.join(extra)}" if extra else ""
    return f"{runnable.description}{suffix}"
