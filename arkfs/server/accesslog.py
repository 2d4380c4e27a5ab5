"""`arkfs serve --access-log FILE|-`: one Combined Log Format line per request.

Never a secret: the user field is always `-` (tokens travel in the Authorization header,
which is never read here), and a query string that carries a signature or a token, in the
request target or in the Referer, is dropped whole (`?sig=` of signed xorb URLs, and
pre-signed S3 URLs). A request that got no reply (its client left first) is logged with
status 499, as nginx does.
"""

import logging
import logging.handlers
import queue
import sys
import time

from starlette.types import Scope

from arkfs.util.urls import without_secrets

log = logging.getLogger("arkfs.serve")

MAX_PENDING = 100_000  # lines waiting for the writer thread
NO_REPLY = 499  # the status logged for a request whose client left before any reply
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


class AccessLog:
    """Lines written to target, a file (appended to, reopened when logrotate moves it) or `-`
    (stdout), by a thread of their own: a slow disk or a full pipe never stalls the server.
    Up to MAX_PENDING lines wait; past that, lines are dropped and a warning says so once.

    OSError if the file cannot be opened. close() writes what is pending and closes it.
    """

    def __init__(self, target: str) -> None:
        self._handler: logging.Handler
        if target == "-":
            self._handler = logging.StreamHandler(sys.stdout)
        else:
            self._handler = logging.handlers.WatchedFileHandler(target, encoding="utf-8")
        self._handler.setFormatter(logging.Formatter("%(message)s"))
        self._pending: queue.Queue[logging.LogRecord] = queue.Queue(MAX_PENDING)
        self._writer = logging.handlers.QueueListener(self._pending, self._handler)
        self._writer.start()
        self._dropping = False

    def write(self, line: str) -> None:
        """Queue one line; never blocks."""
        try:
            self._pending.put_nowait(logging.makeLogRecord({"msg": line}))
        except queue.Full:
            if not self._dropping:
                log.warning("the access log is not keeping up: dropping lines")
            self._dropping = True

    def close(self) -> None:
        self._writer.stop()
        self._handler.close()


def _quoted(text: str) -> str:
    """text (latin-1 decoded bytes) for a quoted CLF field: quotes and backslashes escaped,
    every byte outside printable ASCII as \\xNN."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif " " <= ch <= "~":
            out.append(ch)
        else:
            out.append(f"\\x{ord(ch):02x}")
    return "".join(out) or "-"


def _header(scope: Scope, name: bytes) -> str:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return ""


def clf_line(scope: Scope, status: int, sent: int, when: float) -> str:
    """The Combined Log Format line of one request: `host - - [time] "request" status bytes
    "referer" "user-agent"`, secrets removed (without_secrets)."""
    client = scope.get("client")
    host = client[0] if client else "-"
    t = time.gmtime(when)
    stamp = f"{t.tm_mday:02d}/{_MONTHS[t.tm_mon - 1]}/{time.strftime('%Y:%H:%M:%S', t)} +0000"
    raw = scope.get("raw_path") or scope["path"].encode()
    target = raw.decode("latin-1")
    if scope.get("query_string"):
        target += "?" + scope["query_string"].decode("latin-1")
    request = f"{scope['method']} {without_secrets(target)} HTTP/{scope.get('http_version', '1.1')}"
    referer = without_secrets(_header(scope, b"referer"))
    agent = _header(scope, b"user-agent")
    return (
        f'{host} - - [{stamp}] "{_quoted(request)}" {status} {sent or "-"} '
        f'"{_quoted(referer)}" "{_quoted(agent)}"'
    )
