"""The ASGI application of `arkfs serve` and how to run it with hypercorn on trio.

Routes: the CAS API and its counters, `GET /v1/stats` (cas.py), `GET /v1/token[/{scope}]`
(below), and the NMA (nma.py).
CAS and token errors are JSON `{"error"}`; NMA errors are one line of text/plain. Other
paths get 404 (hf_xet relies on that to fall back from routes a CAS may lack).
"""

import logging

import trio
from hypercorn.config import Config
from hypercorn.trio import serve
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from arkfs.server.auth import AuthError, Authorizer, Scope
from arkfs.server.cas import CasService, HttpError, error_response
from arkfs.server.nma import NmaService
from arkfs.server.signing import UrlSigner
from arkfs.server.tokens import SCOPES
from arkfs.store.base import Store

log = logging.getLogger("arkfs.serve")


async def _http_error(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HttpError | AuthError)
    status = exc.status
    response = error_response(status, exc.message if isinstance(exc, HttpError) else str(exc))
    if isinstance(exc, HttpError):
        response.headers.update(exc.headers)
    if status == 401:
        response.headers["WWW-Authenticate"] = "Bearer"
    return response


def token_routes(auth: Authorizer) -> list[Route]:
    """`GET /v1/token[/{scope}]`: a derived token, as the Hugging Face Hub's xet token route.

    The caller proves the scope with its own token (or --open-read, for read); the reply
    is `{"accessToken", "exp", "casUrl"}`, casUrl being the base URL without trailing slash.
    """

    async def token(request: Request) -> Response:
        scope = request.path_params.get("scope", "read")
        if scope not in SCOPES:
            raise HttpError(400, f"no token scope {scope!r}: use /v1/token/read or /v1/token/write")
        auth.require(request.headers.get("authorization"), Scope[scope.upper()], derived=False)
        access, exp = auth.issuer.issue(scope)
        body = {"accessToken": access, "exp": exp, "casUrl": str(request.base_url).rstrip("/")}
        return JSONResponse(body, headers={"Cache-Control": "no-store"})

    return [Route("/v1/token", token), Route("/v1/token/{scope}", token)]


def build_app(store: Store, auth: Authorizer, signer: UrlSigner | None = None) -> Starlette:
    """The whole service: CAS API, token route and NMA over store, with auth and signed URLs."""
    cas = CasService(store, auth, signer or UrlSigner(), trio.CapacityLimiter(4))
    nma = NmaService(store, auth, trio.CapacityLimiter(4))
    return Starlette(
        routes=[*cas.routes(), *token_routes(auth), *nma.routes()],
        exception_handlers={HttpError: _http_error, AuthError: _http_error},
    )


async def run_server(
    store: Store,
    auth: Authorizer,
    host: str,
    port: int,
    signer: UrlSigner | None = None,
    task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve until cancelled; report the base URL through task_status once listening."""
    app = build_app(store, auth, signer)
    config = Config()
    config.bind = [f"{host}:{port}"]
    config.accesslog = None  # request lines can carry signed URLs; never log tokens
    config.errorlog = log
    config.keep_alive_timeout = 30
    await serve(app, config, task_status=task_status)  # type: ignore[arg-type]
