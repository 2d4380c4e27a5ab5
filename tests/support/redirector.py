"""An N2T-like HTTP server on 127.0.0.1 for resolver tests: it redirects path prefixes,
answers /.well-known/ark and ?info if told to, and records every request it gets."""

import http.server
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from tests.support.threaded import serve_in_thread


@dataclass(frozen=True)
class Seen:
    """One request: method, path (with query) and its Authorization header."""

    method: str
    path: str
    authorization: str | None


@dataclass
class Redirector:
    """Routes: path prefix -> (status, target); a request under the prefix is redirected to
    target + the rest of its path, unless `pages[path]` is set (with `headers[path]`, if
    set). Anything else gets that page, else 200 if it is under one of the `found` prefixes
    (a resolver that has the ARK), else 404."""

    url: str = ""
    routes: dict[str, tuple[int, str]] = field(default_factory=dict)
    pages: dict[str, str] = field(default_factory=dict)
    headers: dict[str, dict[str, str]] = field(default_factory=dict)  # path -> extra headers
    found: list[str] = field(default_factory=list)
    seen: list[Seen] = field(default_factory=list)

    def redirect(self, prefix: str, target: str, status: int = 302) -> None:
        self.routes[prefix] = (status, target)

    def auth_seen(self) -> set[str | None]:
        """Every Authorization header this server received (None: a request without)."""
        return {s.authorization for s in self.seen}


def _handler(state: Redirector) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def _answer(self, body: bool) -> None:
            state.seen.append(Seen(self.command, self.path, self.headers.get("Authorization")))
            for prefix, (status, target) in sorted(state.routes.items(), key=lambda r: -len(r[0])):
                if self.path.startswith(prefix) and self.path not in state.pages:
                    self.send_response(status)
                    self.send_header("Location", target + self.path[len(prefix) :])
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
            page = state.pages.get(self.path)
            if page is None and any(self.path.startswith(p) for p in state.found):
                page = "found\n"
            data = (page if page is not None else "not here\n").encode()
            self.send_response(200 if page is not None else 404)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            for name, value in state.headers.get(self.path, {}).items():
                self.send_header(name, value)
            self.end_headers()
            if body:
                self.wfile.write(data)

        def do_GET(self) -> None:
            self._answer(True)

        def do_HEAD(self) -> None:
            self._answer(False)

    return Handler


@contextmanager
def redirector() -> Iterator[Redirector]:
    """A Redirector serving on 127.0.0.1 in a thread; stopped at the end."""
    state = Redirector()
    with serve_in_thread(_handler(state)) as url:
        state.url = url
        yield state
