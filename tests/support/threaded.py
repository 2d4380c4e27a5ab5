"""An http.server handler served on 127.0.0.1 in a thread, stopped at the end."""

import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def serve_in_thread(handler: type[http.server.BaseHTTPRequestHandler]) -> Iterator[str]:
    """Serve handler; yield the base URL (http://127.0.0.1:PORT)."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)
