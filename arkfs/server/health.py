"""`GET /healthz` and `GET /readyz`: what a load balancer or an orchestrator asks.

/healthz answers 200 while the process serves requests: it touches nothing. /readyz answers
200 once the store answers one trivial question (Store.ready: no per-ARK work, so it costs
the same at any store size), else 503 with Retry-After: a replica whose database or bucket
is down leaves the pool only while it is down. A check that takes longer than READY_TIMEOUT
counts as down; checks run one at a time, so a hung store holds one worker thread at most.
A change of readiness is logged once, not every check.
"""

import logging
from dataclasses import dataclass, field

import trio
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from arkfs.store.base import Store
from arkfs.store.errors import StoreError

log = logging.getLogger("arkfs.serve")

READY_TIMEOUT = 2.0  # seconds a readiness check may take before the store counts as down
NO_CACHE = {"Cache-Control": "no-store"}


@dataclass
class Health:
    """The two routes over one store; remembers the last readiness to log its changes."""

    store: Store
    ready: bool = True
    _limiter: trio.CapacityLimiter = field(default_factory=lambda: trio.CapacityLimiter(1))

    def routes(self) -> list[Route]:
        return [Route("/healthz", self.healthz), Route("/readyz", self.readyz)]

    async def healthz(self, request: Request) -> Response:
        """Alive: the server answers."""
        return PlainTextResponse("ok\n", headers=NO_CACHE)

    async def readyz(self, request: Request) -> Response:
        """Ready: the store and its index answer within READY_TIMEOUT."""
        problem = await self._problem()
        if (problem is None) != self.ready:
            self.ready = problem is None
            if problem is None:
                log.warning("ready again: the store answers")
            else:
                log.warning("not ready: %s", problem)
        if problem is None:
            return PlainTextResponse("ready\n", headers=NO_CACHE)
        headers = NO_CACHE | {"Retry-After": "1"}
        return PlainTextResponse("not ready: the store is unavailable\n", 503, headers=headers)

    async def _problem(self) -> str | None:
        """Why the store is not ready, or None."""
        with trio.move_on_after(READY_TIMEOUT):
            try:
                await trio.to_thread.run_sync(
                    self.store.ready, abandon_on_cancel=True, limiter=self._limiter
                )
            except (StoreError, OSError) as exc:
                return " ".join(str(exc).splitlines())
            return None
        return f"the store did not answer within {READY_TIMEOUT:g} s"
