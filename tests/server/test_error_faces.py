"""One error mapping: every route answers every error in its face's format, with one log
line for a 5xx and never a traceback.

The app runs in this process over a store that fails on purpose, driven through httpx's
ASGI transport on trio; the log is captured with caplog.
"""

import logging
from typing import Any, cast

import httpx
import pytest
import trio

from arkfs.server.app import RETRY_AFTER, build_app
from arkfs.server.auth import Authorizer, Scope
from arkfs.store.base import Store
from arkfs.store.errors import StoreError

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`

READ = {"Authorization": "Bearer r"}
FILE = "/v1/reconstructions/" + "12" * 32
CAS_ROUTES = [FILE, "/v2/reconstructions/" + "12" * 32, "/v1/chunks/default/" + "34" * 32]
RESOLVER_ROUTES = ["/ark:12345/x6fail", "/ark:12345/x6fail/f.txt?info", "/arks"]


class FailingStore:
    """A store whose every call raises exc: unreachable, or a bug."""

    def __init__(self, exc: Exception) -> None:
        self.exc = exc

    def __getattr__(self, name: str) -> Any:
        def fail(*args: object) -> None:
            raise self.exc

        return fail


def get_all(exc: Exception, paths: list[str]) -> list[httpx.Response]:
    """GET each path from an app over a store that raises exc."""
    app = build_app(cast(Store, FailingStore(exc)), Authorizer({"r": Scope.READ}))

    async def main() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://arkfs") as client:
            return [await client.get(p, headers=READ) for p in paths]

    return trio.run(main)


def served_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "arkfs.serve"]


@pytest.mark.parametrize(
    "exc", [StoreError("index /srv/index.sqlite: database is locked"), OSError(5, "I/O error")]
)
def test_an_unavailable_store_is_503_with_retry_after(
    exc: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "arkfs.serve")
    replies = get_all(exc, CAS_ROUTES + RESOLVER_ROUTES)
    for path, r in zip(CAS_ROUTES + RESOLVER_ROUTES, replies, strict=True):
        assert r.status_code == 503, path
        assert r.headers["retry-after"] == str(RETRY_AFTER)
        if path in CAS_ROUTES:
            assert r.headers["content-type"] == "application/json"
            assert "retry later" in r.json()["error"]
        else:
            assert r.headers["content-type"].startswith("text/plain")
            assert "retry later" in r.text and r.text.count("\n") == 1
        assert "/srv/" not in r.text  # the store's details go to the log, not to clients
    records = served_lines(caplog)
    assert len(records) == len(replies)  # one line per reply
    assert all(r.exc_info is None and "\n" not in r.getMessage() for r in records)
    assert str(exc) in records[0].getMessage()


def test_a_bug_is_500_in_the_face_format_with_one_log_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, "arkfs.serve")
    cas, resolver = get_all(RuntimeError("boom\nsecond line"), [FILE, "/ark:12345/x6fail"])
    assert cas.status_code == 500 and cas.headers["content-type"] == "application/json"
    assert "internal error (RuntimeError)" in cas.json()["error"]
    assert resolver.status_code == 500 and resolver.headers["content-type"].startswith("text/")
    assert resolver.text.startswith("internal error (RuntimeError)")
    assert resolver.text.count("\n") == 1
    records = served_lines(caplog)
    assert [r.getMessage() for r in records] == [
        f"GET {FILE}: bug: RuntimeError: boom second line",
        "GET /ark:12345/x6fail: bug: RuntimeError: boom second line",
    ]
    assert all(r.exc_info is None for r in records)


def test_unknown_paths_and_methods_answer_in_the_face_format() -> None:
    app = build_app(cast(Store, FailingStore(RuntimeError())), Authorizer())

    async def main() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://arkfs") as client:
            return [
                await client.post("/v2/nothing", content=b"x"),
                await client.delete(FILE),
                await client.get("/nothing-here"),
            ]

    missing, method, elsewhere = trio.run(main)
    assert missing.status_code == 404 and missing.json() == {"error": "Not Found"}
    assert method.status_code == 405 and method.json() == {"error": "Method Not Allowed"}
    assert set(method.headers["allow"].split(", ")) == {"GET", "HEAD"}
    assert elsewhere.status_code == 404 and elsewhere.text == "Not Found\n"
