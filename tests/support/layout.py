"""Measuring how a page lays out in headless Chromium: a loopback proxy in front of a
server adds one script to each HTML page, which records the page's scrollWidth and the
viewport's width on the root element once the page has loaded; `dump_dom` then reads them."""

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

from tests.support.browser import _run

PROBE = (
    "<script>addEventListener('load',()=>{const d=document.documentElement;"
    "d.setAttribute('data-scroll-width',d.scrollWidth);"
    "d.setAttribute('data-viewport-width',innerWidth)})</script>"
)


@contextmanager
def measuring_proxy(origin: str) -> Iterator[str]:
    """A proxy of origin on loopback that adds PROBE to HTML; its base URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            reply = httpx.get(origin + self.path, headers={"Accept": "text/html"}, timeout=30)
            body = reply.content
            kind = reply.headers.get("content-type", "")
            if kind.startswith("text/html"):
                body = body.replace(b"</body>", PROBE.encode() + b"</body>")
            self.send_response(reply.status_code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def widths(url: str, width: int, workdir: Path) -> tuple[int, int]:
    """(scrollWidth, viewport width) of url (through measuring_proxy) at width pixels."""
    dom = _run(
        [f"--window-size={width},900", "--virtual-time-budget=5000", "--dump-dom", url], workdir
    )
    scroll = re.search(r'data-scroll-width="(\d+)"', dom)
    viewport = re.search(r'data-viewport-width="(\d+)"', dom)
    assert scroll and viewport, dom[:500]
    return int(scroll[1]), int(viewport[1])
