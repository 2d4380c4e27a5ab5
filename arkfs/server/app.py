"""The ASGI application of `arkfs serve` and how to run it with hypercorn on trio."""

import logging

import trio
from hypercorn.config import Config
from hypercorn.trio import serve
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response

from arkfs.server.auth import AuthError, Authorizer
from arkfs.server.cas import CasService, HttpError, error_response
from arkfs.server.signing import UrlSigner
from arkfs.store.base import Store

log = logging.getLogger("arkfs.serve")


async def _http_error(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HttpError | AuthError)
    status = exc.status
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    response = error_response(status, exc.message if isinstance(exc, HttpError) else str(exc))
    if headers:
        response.headers.update(headers)
    return response


def build_app(store: Store, auth: Authorizer, signer: UrlSigner | None = None) -> Starlette:
    """The whole service: CAS API routes over store, with auth and signed xorb URLs."""
    cas = CasService(store, auth, signer or UrlSigner(), trio.CapacityLimiter(4))
    return Starlette(
        routes=cas.routes(),
        exception_handlers={HttpError: _http_error, AuthError: _http_error},
    )


async def run_server(
    store: Store,
    auth: Authorizer,
    host: str,
    port: int,
    task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve until cancelled; report the base URL through task_status once listening."""
    app = build_app(store, auth)
    config = Config()
    config.bind = [f"{host}:{port}"]
    config.accesslog = None  # request lines can carry signed URLs; never log tokens
    config.errorlog = log
    config.keep_alive_timeout = 30
    await serve(app, config, task_status=task_status)  # type: ignore[arg-type]
