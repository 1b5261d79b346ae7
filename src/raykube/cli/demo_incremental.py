"""The demo's act 4e (process nodes): KubeRay v1.7's incremental upgrade through the sandbox's Gateway (Traefik).

``examples/gateway/rayservice-incremental.yaml`` (``NewClusterWithIncrementalUpgrade``: 25 % every 10 s) comes up
Ready; the operator's Gateway is Programmed and has an address; ``examples/serve/client.yaml``, pointed at that
address, calls it every 0.1 s. Then a ``rayClusterConfig`` and greeting change (``Hello`` → ``Hi``): while the operator
moves the traffic, the act polls the HTTPRoute's weight for the new cluster, and once the new cluster is promoted it
prints, 5 s at a time, the share of answers that came from it beside that weight, and fails if a request failed or
the weight did not pass through the steps between 0 and 100.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from typing import Any, Final

import yaml
from rich.markup import escape

from raykube.cli.demo import EXAMPLES, NAMESPACE, DemoFailed, Stage, chapter, claim
from raykube.cli.output import out
from raykube.cli.serveclient import Answer, backend_weights, curve, curve_lines, distinct, parse_log, window
from raykube.waiting import NotYet

SERVICE: Final = "rayservice-incremental"  # examples/gateway/rayservice-incremental.yaml
MANIFEST: Final = EXAMPLES / "gateway" / "rayservice-incremental.yaml"
# examples/serve/client.yaml under a name of its own: act 4d's client may still be terminating
CLIENT_POD: Final = "serve-client-gateway"
POLL_SECONDS: Final = 0.5  # how often the act reads the HTTPRoute's weights (a sampling period)
BUCKET_SECONDS: Final = 5.0


def upgraded_spec(body: dict[str, Any]) -> dict[str, Any]:
    """The change the act makes: the greeting ``Hi`` and an env var on the head (a new cluster spec)."""
    spec = body["spec"]
    config = yaml.safe_load(spec["serveConfigV2"])
    config["applications"][0]["deployments"][0]["user_config"] = {"greeting": "Hi"}
    head = spec["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    env = [*head.get("env", []), {"name": "DEMO_UPGRADE", "value": "incremental"}]
    head["env"] = env
    return {"spec": {"serveConfigV2": yaml.safe_dump(config, sort_keys=False), "rayClusterConfig":
                     spec["rayClusterConfig"]}}  # fmt: skip


class Act:
    """The act's reads of the RayService, its Gateway and HTTPRoute, and the client's log."""

    def __init__(self, stage: Stage) -> None:
        self.stage = stage
        self.weights: list[tuple[float, int]] = []  # the new cluster's HTTPRoute weight as polled: (time, weight)

    async def status(self) -> dict[str, Any]:
        from raykube.api.resources import RAYSERVICES  # noqa: PLC0415 - heavy imports load per command

        return dict((await self.stage.kube.get(RAYSERVICES, SERVICE, NAMESPACE)).get("status") or {})

    async def sides(self) -> tuple[str | None, str | None]:
        """The active and the pending cluster's names."""
        now = await self.status()
        return ((now.get("activeServiceStatus") or {}).get("rayClusterName"),
                (now.get("pendingServiceStatus") or {}).get("rayClusterName"))  # fmt: skip

    async def serving(self) -> str | NotYet:
        now = await self.status()
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in now.get("conditions") or [])
        app = ((now.get("activeServiceStatus") or {}).get("applicationStatuses") or {}).get("hello") or {}
        active = (now.get("activeServiceStatus") or {}).get("rayClusterName")
        return str(active) if ready and app.get("status") == "RUNNING" else NotYet(f"Ready {ready}, app {app}")

    async def address(self) -> str | NotYet:
        from raykube.builders.rayservice.gateway import gateway_ready  # noqa: PLC0415
        from raykube.kube.resources import GATEWAYS  # noqa: PLC0415

        gateway = await self.stage.kube.get_or_none(GATEWAYS, f"{SERVICE}-gateway", NAMESPACE)
        found = ((gateway or {}).get("status") or {}).get("addresses") or []
        if not gateway_ready(gateway) or not found:
            return NotYet(f"Gateway status: {(gateway or {}).get('status')}")
        return f"http://{found[0]['value']}/?name=client"

    async def weight_of(self, cluster: str) -> int | None:
        from raykube.kube.resources import HTTPROUTES  # noqa: PLC0415

        route = await self.stage.kube.get_or_none(HTTPROUTES, f"{SERVICE}-httproute", NAMESPACE)
        return backend_weights(route).get(f"{cluster}-serve-svc")

    async def follow(self) -> None:
        """Poll the pending cluster's weight (a sampling period, not a wait for state)."""
        pending = None
        while True:
            pending = pending or (await self.sides())[1]
            weight = await self.weight_of(pending) if pending else None
            if weight is not None:
                self.weights.append((time.time(), weight))
            await asyncio.sleep(POLL_SECONDS)

    def answers(self) -> list[Answer]:
        return parse_log(self.stage.kubectl("-n", NAMESPACE, "logs", CLIENT_POD, show=False, check=False))

    async def answered(self, since: float, word: str, count: int = 5) -> float | NotYet:
        good = [a for a in self.answers() if a.ok and a.sent >= since and a.word == word]
        return good[count - 1].done if len(good) >= count else NotYet(f"{len(good)} answers '{word}'")

    async def start_client(self, url: str) -> None:
        from raykube.kube.resources import PODS  # noqa: PLC0415

        client = yaml.safe_load((EXAMPLES / "serve" / "client.yaml").read_text())
        client["metadata"]["name"] = CLIENT_POD
        container = client["spec"]["containers"][0]
        container["env"] = [e for e in container["env"] if e["name"] != "URL"] + [{"name": "URL", "value": url}]
        await self.stage.kube.create(PODS, client, NAMESPACE)


async def incremental_act(stage: Stage) -> None:
    from raykube.waiting import wait_for  # noqa: PLC0415

    chapter("4e. KubeRay v1.7's incremental upgrade: traffic moved through a Gateway, 25% every 10 s")
    act = Act(stage)
    stage.kubectl("apply", "-f", str(MANIFEST))
    first: str = await wait_for(act.serving, stage.ready_within, what=f"RayService {SERVICE} to be Ready")
    url: str = await wait_for(act.address, 120, what="the Gateway Accepted, Programmed and with an address")
    stage.kubectl("-n", NAMESPACE, "get", "gateway,httproute")
    await act.start_client(url)
    await wait_for(lambda: act.answered(0.0, "Hello"), 120, what="the client's first answers through the Gateway")
    claim(f"Serve answers through the Gateway at {url} (cluster {first}); the HTTPRoute sends it all the traffic")

    started = time.time()
    change = json.dumps(upgraded_spec(yaml.safe_load(MANIFEST.read_text())))
    stage.kubectl("-n", NAMESPACE, "patch", "rayservice", SERVICE, "--type=merge", "-p", change, show=False)
    out.print(f"[bold]$ kubectl -n {NAMESPACE} patch rayservice {SERVICE} ...[/bold]  [dim](a new head env var and "
              "the greeting Hi: a new cluster)[/dim]")  # fmt: skip

    async def promoted() -> str | NotYet:
        active, pending = await act.sides()
        done = active and active != first and not pending
        return str(active) if done else NotYet(f"active {active}, pending {pending}")

    async with polling(act.follow()):
        second: str = await wait_for(promoted, stage.ready_within, what="the new cluster promoted")
    promoted_at = time.time()
    final = await act.weight_of(second)  # promoted: the weight it ended with
    if final is not None:
        act.weights.append((promoted_at, final))
    end = await wait_for(lambda: act.answered(promoted_at, "Hi", 10), 60, what="answers after the promotion")
    answers = act.answers()
    seen, steps = window(answers, started, end), distinct(act.weights)
    out.print(f"[dim]Share of answers from the new cluster ({second}) beside the HTTPRoute's weight for it, per "
              f"{BUCKET_SECONDS:g} s:[/dim]")  # fmt: skip
    for line in curve_lines(curve(answers, started, end, "Hi", act.weights, BUCKET_SECONDS)):
        out.print(escape(line), highlight=False)
    stage.kubectl("-n", NAMESPACE, "delete", "pod", CLIENT_POD, "--wait=false")
    stage.kubectl("-n", NAMESPACE, "delete", "rayservice", SERVICE)
    if seen["failed"]:
        raise DemoFailed(f"{seen['failed']} of {seen['requests']} requests through the Gateway failed during the "
                         f"incremental upgrade: {', '.join(seen['failures'])}")  # fmt: skip
    if not [w for w in steps if 0 < w < 100] or steps[-1:] != [100]:
        raise DemoFailed(f"the HTTPRoute's weight for the new cluster went {steps}, not in steps from 0 to 100")
    gap = seen["longest_gap_seconds"]
    claim(f"incremental upgrade {first} -> {second}: the new cluster's weight went {' -> '.join(map(str, steps))}; "
          f"{seen['requests']} requests through the Gateway, 0 failed, longest wait {gap:.2f} s")  # fmt: skip


@contextlib.asynccontextmanager
async def polling(task: Any) -> AsyncIterator[None]:
    """Run the coroutine ``task`` while the block runs."""
    running = asyncio.create_task(task)
    try:
        yield
    finally:
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running
