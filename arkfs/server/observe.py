"""ASGI middleware that sees every reply as it leaves: its route template, status, body bytes
and duration, for the metrics and the access log.

It sits outside the error mapping (app.py), so error replies are seen with their status.
Uploads are known by their route's name (metrics.upload_route), given where it is declared.
"""

import time

from starlette.types import ASGIApp, Message, Receive, Send
from starlette.types import Scope as AsgiScope

from arkfs.server.accesslog import NO_REPLY, AccessLog, clf_line
from arkfs.server.metrics import UNMATCHED, UPLOAD, Metrics, upload_outcome


class Observer:
    """Counts each HTTP request in metrics and writes its line to access_log (if any)."""

    def __init__(self, app: ASGIApp, metrics: Metrics, access_log: AccessLog | None) -> None:
        self.app, self.metrics, self.access_log = app, metrics, access_log

    async def __call__(self, scope: AsgiScope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        arrived, started = time.time(), time.perf_counter()
        status, sent, done = NO_REPLY, 0, False
        head = scope["method"] == "HEAD"  # the server sends no body, whatever the app gives

        def record() -> None:
            nonlocal done
            done = True
            self._record(scope, status, sent, arrived, time.perf_counter() - started)

        async def watched(message: Message) -> None:
            nonlocal status, sent
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                sent += 0 if head else len(message.get("body", b""))
                if not message.get("more_body", False):
                    record()  # before the last bytes go: a client that has them sees it counted
            await send(message)

        try:
            await self.app(scope, receive, watched)
        finally:
            if not done:  # no reply, or one cut short
                record()

    def _record(self, scope: AsgiScope, status: int, sent: int, at: float, took: float) -> None:
        """Count one request in the metrics and write its access log line."""
        route = scope.get("route")  # set by starlette's router on a match
        self.metrics.observe(getattr(route, "path", UNMATCHED), scope["method"], status, took)
        name = getattr(route, "name", "") or ""
        methods = getattr(route, "methods", None) or ()  # a 405 reply is no upload
        if name.startswith(UPLOAD) and scope["method"] in methods:
            self.metrics.uploads.labels(name[len(UPLOAD) :], upload_outcome(status)).inc()
        if self.access_log is not None:
            self.access_log.write(clf_line(scope, status, sent, at))
