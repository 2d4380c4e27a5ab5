"""The ASGI application of `arkfs serve`, its one error mapping, and how to run it with
hypercorn on trio.

Routes: `/healthz` and `/readyz` (health.py), the CAS API and its counters, `GET /v1/stats`
(cas.py), `GET /v1/token[/{scope}]` (below), `GET /metrics` (metrics.py), and the NMA
(nma.py), all over one ArchiveService.
Every request is counted, and logged when an access log is given (observe.py). Other paths
get 404 (hf_xet relies on that to fall back from routes a CAS may lack).

Every error is answered here, once, in the format of its route's face: JSON `{"error"}` on
the CAS and token routes (`/v1/...`, `/v2/...`), one line of text/plain elsewhere (the
resolver). 5xx replies also get exactly one log line, never a traceback; a client that
goes away is not an error. A full store is 507 Insufficient Storage, which clients do not
retry; an unavailable one 503 with Retry-After.
"""

import logging
from collections.abc import Awaitable, Callable

import hypercorn.trio.run
import trio
from hypercorn.config import Config
from hypercorn.events import Closed, Event, RawData, Updated
from hypercorn.trio import serve
from hypercorn.trio.tcp_server import TCPServer
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Send
from starlette.types import Scope as AsgiScope

from arkfs.server.accesslog import AccessLog
from arkfs.server.auth import AuthError, Authorizer, OutsideShoulders, Scope
from arkfs.server.cas import CasService
from arkfs.server.health import Health
from arkfs.server.http import HttpError, negotiate
from arkfs.server.hub import HubService
from arkfs.server.metrics import Metrics
from arkfs.server.nma import NmaService
from arkfs.server.observe import Observer
from arkfs.server.pages import error_page
from arkfs.server.public import Network, Public, PublicUrls
from arkfs.server.signing import UrlSigner
from arkfs.server.tokens import SCOPES, derive_key
from arkfs.server.view import Site
from arkfs.server.zerocopy import Span, send_span, span_of
from arkfs.service.archive_service import ArchiveService
from arkfs.store.base import Store
from arkfs.store.errors import (
    NotFound,
    OutOfRange,
    Rejected,
    StoreCorrupt,
    StoreError,
    StoreFull,
)

log = logging.getLogger("arkfs.serve")

GRACEFUL_TIMEOUT = 5.0  # seconds requests in flight get to finish once shutdown starts
KEEP_ALIVE = 30.0  # seconds an idle connection is kept open for the client's next request
RETRY_AFTER = 1  # seconds before a retry of a store that is unavailable: within a 10 s deadline
STORE_FULL = "the server's store is full; its operator must free space"  # 507's message
JSON_FACE = ("/v1/", "/v2/")  # path prefixes of the CAS and token routes
# What hypercorn's send raises when the client closed (or half-closed) under a reply.
_GONE = (trio.BrokenResourceError, trio.BusyResourceError, trio.ClosedResourceError)


def _status(exc: Exception) -> tuple[int, str, dict[str, str], str | None]:
    """The reply an error means: status, message, headers, and the line to log (5xx only)."""
    match exc:
        case HttpError():
            logged = exc.message if exc.status >= 500 else None
            return exc.status, exc.message, exc.headers, logged
        case AuthError():
            headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else {}
            return exc.status, str(exc), headers, None
        case HTTPException():  # starlette's own: an unknown path or method
            return exc.status_code, exc.detail, dict(exc.headers or {}), None
        case NotFound():
            return 404, str(exc), {}, None
        case OutOfRange():
            return 416, str(exc), {}, None
        case Rejected():
            return 400, str(exc), {}, None
        case StoreCorrupt():
            return 500, str(exc), {}, str(exc)
        case StoreFull():
            return 507, STORE_FULL, {}, f"store: {exc}"
        case StoreError() | OSError():
            retry = {"Retry-After": str(RETRY_AFTER)}
            return 503, "the store is unavailable; retry later", retry, f"store: {exc}"
        case _:
            name = type(exc).__name__
            return 500, f"internal error ({name}); see the server log", {}, f"bug: {name}: {exc}"


def _error_reply(request: Request, exc: Exception) -> Response:
    """The reply to exc on the request's route, in its face's format (the resolver's as HTML
    when the client prefers it: a browser); 5xx are logged once."""
    method, path = request.method, request.url.path
    status, message, headers, logged = _status(exc)
    if logged is not None:
        log.error("%s %s: %s", method, path, _one_line(logged))
    if isinstance(exc, OutsideShoulders):  # a client that binds reads which shoulder
        body = {"error": message, "ark": str(exc.ark), "shoulder": exc.shoulder}
        return JSONResponse(body | {"granted": list(exc.granted)}, status_code=status)
    if path.startswith(JSON_FACE):
        return JSONResponse({"error": message}, status_code=status, headers=headers)
    if negotiate(request.headers.get("accept"), ("text/plain", "text/html")) == "text/html":
        nearest = exc.nearest if isinstance(exc, HttpError) else None
        page = error_page(Site.of(request), status, _one_line(message), nearest)
        return HTMLResponse(page, status_code=status, headers=headers)
    return Response(
        _one_line(message) + "\n", status_code=status, headers=headers, media_type="text/plain"
    )


def _one_line(text: str) -> str:
    return " ".join(text.splitlines())


class ErrorReplies:
    """ASGI middleware: whatever a route raises becomes _error_reply's answer.

    Once a reply has started (a streamed file) it cannot change: the error is logged in one
    line and the connection dropped, so the client sees an incomplete body.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: AsgiScope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watched(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            try:
                await send(message)
            except _GONE as exc:  # the connection is being torn down under the reply
                raise ClientDisconnect() from exc

        method, path = scope["method"], scope["path"]
        try:
            try:
                await self.app(scope, receive, watched)
            except ClientDisconnect:
                raise
            except Exception as exc:
                if started:
                    log.error("%s %s: reply cut short: %s", method, path, _one_line(str(exc)))
                    return
                await _error_reply(Request(scope), exc)(scope, receive, watched)
        except ClientDisconnect:
            log.debug("%s %s: the client went away", method, path)


async def _starlette_error(request: Request, exc: Exception) -> Response:
    """Starlette answers unknown paths and methods itself; this gives them our format."""
    return _error_reply(request, exc)


def token_routes(auth: Authorizer) -> list[Route]:
    """`GET /v1/token[/{scope}]`: a derived token, as the Hugging Face Hub's xet token route.

    The caller proves the scope with its own token (or --open-read, for read); the reply
    is `{"accessToken", "exp", "casUrl"}`, casUrl being the base URL without trailing slash.
    """

    async def token(request: Request) -> Response:
        scope = request.path_params.get("scope", "read")
        if scope not in SCOPES:
            raise HttpError(400, f"no token scope {scope!r}: use /v1/token/read or /v1/token/write")
        token = auth.require(request.headers.get("authorization"), Scope[scope.upper()], False)
        access, exp = auth.issuer.issue(auth.derived_scope(token, scope) if token else scope)
        body = {"accessToken": access, "exp": exp, "casUrl": str(request.base_url).rstrip("/")}
        return JSONResponse(body, headers={"Cache-Control": "no-store"})

    return [Route("/v1/token", token), Route("/v1/token/{scope}", token)]


def build_app(
    store: Store,
    auth: Authorizer,
    signer: UrlSigner | None = None,
    workers: int = 4,
    access_log: AccessLog | None = None,
    public: Public | None = None,
    trusted: tuple[Network, ...] | None = (),
) -> Starlette:
    """The whole service: CAS API, token route, metrics and NMA over store, with auth and
    signed URLs; each face runs up to workers blocking store calls at once, in its own worker
    threads. Every request is counted, and written to access_log if given. Absolute URLs
    use the public base URL, else what trusted proxies forward (public.py)."""
    signer = signer or UrlSigner()
    service = ArchiveService(store, derive_key(signer.key, "dedup"), "on this server")
    metrics = Metrics(service)
    cas = CasService(service, auth, trio.CapacityLimiter(workers), metrics, signer)
    nma = NmaService(service, auth, trio.CapacityLimiter(workers), metrics)
    scrape = metrics.route(auth, trio.CapacityLimiter(1))
    hub = HubService(service, auth, trio.CapacityLimiter(workers), metrics)  # hub.py
    return Starlette(
        routes=[
            *Health(store).routes(),
            *cas.routes(),
            *token_routes(auth),
            scrape,
            *hub.routes(),
            *nma.routes(),
        ],
        middleware=[
            Middleware(PublicUrls, public, trusted),
            Middleware(Observer, metrics, access_log),
            Middleware(ErrorReplies),
        ],
        exception_handlers={HTTPException: _starlette_error},
    )


class _OneConnection(TCPServer):
    """hypercorn's server of one connection, whose failures end that connection only, and
    whose end or recycling after a reply is never cancelled half-way.

    hypercorn 0.18 lets some protocol races escape a connection's task, and they end the
    whole server: a client that sends a request's headers and half-closes while the reply
    goes out (an early 401 or 413) raises trio.BusyResourceError. Its mitigation upstream
    (pgjones/hypercorn#228) is in no release; this is it, for arkfs.

    hypercorn also closes (`Connection: close`) or recycles (keep-alive) a connection from
    inside the app's task, once the app sent the last bytes of its reply. For a streamed
    reply, that task is starlette's StreamingResponse, which hypercorn's own http.disconnect
    (sent on that same path) cancels: the close or the restart of the keep-alive timer was
    cancelled at its first checkpoint, and the socket stayed open until the client closed
    it (300 GETs with `Connection: close` held 300 descriptors). Both are quick and cannot
    block, so they run shielded.
    """

    async def protocol_send(self, event: Event) -> None:
        span = span_of(event.data) if isinstance(event, RawData) else None
        if span is not None and isinstance(self.stream, trio.SocketStream):
            await self._send_from_file(span)
        elif isinstance(event, Closed | Updated):
            with trio.CancelScope(shield=True):
                await super().protocol_send(event)
        else:
            await super().protocol_send(event)

    async def _send_from_file(self, span: Span) -> None:
        """A reply body sent from its file (zerocopy.py), under hypercorn's send rules: one
        write at a time, never cancelled half-way, and a failed send closes the connection."""
        async with self.send_lock:
            try:
                with trio.CancelScope(shield=True):
                    await send_span(self.stream.socket, span)
            except (OSError, trio.ClosedResourceError) as exc:  # the socket, or the file
                gone = isinstance(exc, ConnectionError) or self.stream.socket.fileno() == -1
                if isinstance(exc, OSError) and not gone:  # the file failed, not the client
                    log.error("a reply from a file was cut short: %s", _one_line(str(exc)))
                await self.protocol.handle(Closed())

    async def run(self) -> None:
        try:
            await super().run()
        except Exception as exc:  # never BaseException: cancellation must go through
            log.warning(
                "a connection failed inside hypercorn; dropped it: %s", _one_line(repr(exc))
            )


hypercorn.trio.run.TCPServer = _OneConnection  # type: ignore[attr-defined]  # looked up per serve()


async def run_server(
    store: Store,
    auth: Authorizer,
    host: str,
    port: int,
    signer: UrlSigner | None = None,
    workers: int = 4,
    task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
    shutdown_trigger: Callable[[], Awaitable[None]] | None = None,
    access_log: AccessLog | None = None,
    keep_alive: float = KEEP_ALIVE,
    public: Public | None = None,
    trusted: tuple[Network, ...] | None = (),
) -> None:
    """Serve until cancelled, or until shutdown_trigger returns (then requests in flight
    get GRACEFUL_TIMEOUT to finish); report the base URL through task_status once
    listening. access_log: where each request's line goes (accesslog.py), if anywhere;
    keep_alive: the seconds an idle connection is kept open; public, trusted: the public base
    URL and the proxies whose X-Forwarded-* headers are believed (public.py)."""
    app = build_app(store, auth, signer, workers, access_log, public, trusted)
    config = Config()
    config.bind = [f"{host}:{port}"]
    config.accesslog = None  # hypercorn's would log signed URLs; accesslog.py strips them
    config.errorlog = log
    config.keep_alive_timeout = keep_alive
    config.graceful_timeout = GRACEFUL_TIMEOUT
    await serve(app, config, shutdown_trigger=shutdown_trigger, task_status=task_status)  # type: ignore[arg-type]
