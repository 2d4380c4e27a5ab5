"""`arkfs serve`: the archive side, an ARK resolver and a XET CAS on one base URL."""

from __future__ import annotations

import argparse
import functools
import logging
import math
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

from arkfs.cli.common import BadInput, first_error
from arkfs.cli.store_options import add_store_options, open_store, workers
from arkfs.server.signing import DEFAULT_URL_TTL
from arkfs.server.tokens import DEFAULT_TTL

MIN_KEY_BYTES = 32
MAX_PORT = 65535
# Signed xorb URLs: a client needs a minute at least to use one; a pre-signed S3 URL lives
# 4/3 of the ttl (signing.py, bucket.py), and SigV4 allows 7 days at most.
MIN_URL_TTL, MAX_URL_TTL = 60, 7 * 86400 * 3 // 4


TOKENS_FORMAT = """\
The tokens file (--tokens FILE) holds one token per line: the token, blanks, and its
scopes: `read` (GET the archives and the CAS), `write` (read, upload, and bind, publish or
withdraw any ARK of the server's NAANs), `write:NAAN/SHOULDER` (the same, but only ARKs
whose Name starts with SHOULDER; `write:NAAN` for a whole NAAN; several may be given) or
`admin` (all of these). Blank lines and everything after a `#` are skipped; a token may
not contain `#` or spaces, nor start with `arkfs1.` (the server's derived tokens). Clients
send a token as `Authorization: Bearer TOKEN` (--token, --token-file or $ARKFS_TOKEN); the
server never logs one. For example:
  # tokens.txt: readable by the server's user only (chmod 600)
  3f9c2a7e5b1d48c6a0e7f2b4d9c1e8a5   read
  b71e0d94c3a25f6e8d1c7b0a9f4e3d2c   write    # the publishing robot
  5d0c9e8b7a6f4e3d2c1b0a9f8e7d6c5b   write:12345/x6 write:12345/b2    # one department
  a1b2c3d4e5f60718293a4b5c6d7e8f90   admin
"""
SERVE_EXAMPLES = """
Examples:
  arkfs serve --store ~/arkstore --port 8080 --open-read --tokens tokens.txt
  arkfs serve --store s3://archive/arkfs --s3-endpoint https://s3.example.org \\
      --index postgresql://arkfs@db/arkfs --key-file key
Scaled out, the second runs on as many hosts as needed, sharing the key; readers then
fetch xorb bytes from the bucket through pre-signed URLs.
"""


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `arkfs serve`."""
    p = sub.add_parser(
        "serve",
        help="serve a store over HTTP: ARK resolver and XET CAS",
        description="Serve a store directory on one base URL: the ARK resolver "
        "(GET /ark:NAAN/Name..., ?info, PUT to bind, /arks, /.well-known/ark), the XET CAS "
        "API that hf_xet speaks, GET /v1/token[/read|/write] for short-lived tokens, and "
        "GET /v1/stats for what the CAS has served since it started (JSON counters), and "
        "GET /metrics for Prometheus. "
        "Reads need a read token unless --open-read; writes always need a write token.",
        epilog=TOKENS_FORMAT + SERVE_EXAMPLES,
    )
    store = p.add_argument_group("store")
    store.add_argument(
        "--store",
        required=True,
        metavar="DIR|s3://BUCKET[/PREFIX]",
        help="store directory (created if missing), or a bucket with --index",
    )
    add_store_options(store)
    listen = p.add_argument_group("listening")
    listen.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)"
    )
    listen.add_argument(
        "--port", type=int, default=8080, help="port (default 8080; 0 picks a free one)"
    )
    listen.add_argument(
        "--keep-alive",
        type=float,
        metavar="SECONDS",
        help="seconds an idle connection is kept open (default: half a minute)",
    )
    listen.add_argument(
        "--base-url",
        metavar="URL",
        help="the public base URL, e.g. https://ark.example.org[/prefix], that every absolute "
        "URL the server writes uses (behind a TLS-terminating proxy); default: as asked",
    )
    listen.add_argument(
        "--forwarded-allow-ips",
        metavar="IPS",
        help="comma-separated addresses or networks of trusted proxies (or `*`), whose "
        "X-Forwarded-Proto, -Host and -Prefix headers say the public URL (unless --base-url)",
    )
    access = p.add_argument_group("access")
    access.add_argument(
        "--naan",
        action="append",
        metavar="NAAN",
        help="a NAAN this server is authoritative for (repeat for several): binding any "
        "other is refused, and the home page advertises only these (default: any)",
    )
    access.add_argument("--open-read", action="store_true", help="let anyone read without a token")
    access.add_argument(
        "--tokens",
        type=Path,
        metavar="FILE",
        help="the tokens file: `TOKEN SCOPE...` lines (format below)",
    )
    access.add_argument(
        "--key-file",
        type=Path,
        action="append",
        help=f"secret key (at least {MIN_KEY_BYTES} bytes) that signs derived tokens and xorb "
        "URLs, so they survive restarts and work across servers sharing it "
        "(default: a new random key at each start); repeat it to rotate keys: the first "
        "signs, every one is accepted",
        metavar="FILE",
    )
    access.add_argument(
        "--token-ttl",
        type=int,
        default=DEFAULT_TTL,
        metavar="SECONDS",
        help=f"lifetime in seconds of tokens from /v1/token (default {DEFAULT_TTL})",
    )
    access.add_argument(
        "--url-ttl",
        type=int,
        default=DEFAULT_URL_TTL,
        metavar="SECONDS",
        help="lifetime in seconds of the signed xorb URLs a reconstruction hands out "
        f"(default {DEFAULT_URL_TTL}, {MIN_URL_TTL} to {MAX_URL_TTL}); readers within a third "
        "of it get the same URL of a xorb, so a site cache keyed on URLs (squid) misses "
        "once per third: longer suits caches, shorter limits how long a leaked URL works",
    )
    logs = p.add_argument_group("logging")
    logs.add_argument(
        "--access-log",
        metavar="FILE|-",
        help="append one Combined Log Format line per request to FILE (`-`: stdout); "
        "tokens and signed URLs' signatures are never written",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Open the store and serve until interrupted."""
    import trio  # the server's machinery, imported only now: --help starts at once

    from arkfs.server.accesslog import AccessLog
    from arkfs.server.app import KEEP_ALIVE, run_server
    from arkfs.server.auth import Authorizer, TokensFileError
    from arkfs.server.public import Public, PublicUrlError, parse_trusted
    from arkfs.server.signing import UrlSigner
    from arkfs.server.tokens import TokenIssuer, derive_key
    from arkfs.util.sdnotify import notify

    if args.keep_alive is None:
        args.keep_alive = KEEP_ALIVE
    if args.tokens is not None and not args.tokens.is_file():
        raise BadInput(f"tokens file {args.tokens} does not exist")
    if not 0 <= args.port <= MAX_PORT:
        raise BadInput(f"--port {args.port} is not a port number (0 to {MAX_PORT})")
    if not 0 < args.keep_alive < math.inf:
        raise BadInput(f"--keep-alive must be a positive number of seconds, got {args.keep_alive}")
    if args.token_ttl <= 0:
        raise BadInput(f"--token-ttl must be a positive number of seconds, got {args.token_ttl}")
    if not MIN_URL_TTL <= args.url_ttl <= MAX_URL_TTL:
        raise BadInput(
            f"--url-ttl must be {MIN_URL_TTL} to {MAX_URL_TTL} seconds, got {args.url_ttl}"
        )
    try:
        public = Public.parse(args.base_url) if args.base_url else None
        trusted = parse_trusted(args.forwarded_allow_ips) if args.forwarded_allow_ips else ()
    except PublicUrlError as exc:
        raise BadInput(str(exc)) from None
    keys = [_read_key(path) for path in args.key_file or ()]
    key, older = (keys[0], tuple(keys[1:])) if keys else (None, ())
    issuer = TokenIssuer(
        derive_key(key, "tokens") if key else None,
        args.token_ttl,
        tuple(derive_key(k, "tokens") for k in older),
    )
    signer = UrlSigner(key, args.url_ttl, older)  # no key: a random one
    if key:
        signer = signer.derived("xorb urls")
    try:
        auth = Authorizer.from_file(args.tokens, args.open_read, issuer, _naans(args.naan))
    except TokensFileError as exc:
        raise BadInput(str(exc)) from None
    if args.tokens is None and not args.open_read:
        print(
            "arkfs: no --tokens and no --open-read: every request will be refused", file=sys.stderr
        )
    # The clients' own lines are chatter (botocore INFO) or repeat, over several lines, what
    # the one line of a failed open or a 503 says (psycopg_pool's reconnection warnings).
    logging.getLogger("botocore").setLevel(logging.WARNING)
    logging.getLogger("psycopg.pool").setLevel(logging.ERROR)
    try:
        access_log = AccessLog(args.access_log) if args.access_log else None
    except OSError as exc:
        raise BadInput(f"cannot open access log {args.access_log}: {exc.strerror or exc}") from None
    store = open_store(args, args.store)  # before logging: a failure is one line, not a log
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    if key is None and str(args.store).startswith("s3://"):
        logging.getLogger("arkfs.serve").warning(
            "this shared store runs on a random key: other replicas refuse its tokens and "
            "signed URLs, and a restart voids them; give every replica the same --key-file"
        )
    stopped_by: list[str] = []

    async def main() -> None:
        stop = trio.Event()

        async def watch(signals: AsyncIterator[int]) -> None:
            async for signum in signals:
                stopped_by.append(signal.Signals(signum).name)
                notify("STOPPING=1")
                stop.set()
                return

        server = functools.partial(
            run_server,
            shutdown_trigger=stop.wait,
            access_log=access_log,
            keep_alive=args.keep_alive,
            public=public,
            trusted=trusted,
        )
        # The signals are caught before READY=1 is sent: a SIGTERM that follows READY at
        # once must stop the server cleanly, not kill it with the default handler.
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(watch, signals)
                try:
                    binds = await nursery.start(
                        server, store, auth, args.host, args.port, signer, workers(args.store)
                    )
                except* OSError as group:
                    why = first_error(group)
                    reason = why.strerror if isinstance(why, OSError) and why.strerror else why
                    raise BadInput(f"cannot listen on {args.host}:{args.port}: {reason}") from None
                print(f"arkfs: serving {args.store} on {binds[0]}", flush=True)
                notify("READY=1", f"STATUS=serving {args.store} on {binds[0]}")

    try:
        trio.run(main)
    finally:
        store.close()
        if access_log is not None:
            access_log.close()
    if stopped_by:
        print(f"arkfs: {stopped_by[0]}: stopped serving", file=sys.stderr)
    return 0


def _naans(given: list[str] | None) -> frozenset[str] | None:
    """The normalized NAANs of --naan (None: not given); BadInput if one is malformed."""
    from arkfs.ark.errors import ArkError
    from arkfs.server.auth import Shoulder

    if given is None:
        return None
    try:
        return frozenset(Shoulder.parse(n.strip()).naan for n in given)
    except ArkError as exc:
        raise BadInput(f"--naan: {exc}") from None


def _read_key(path: Path) -> bytes:
    """The secret key in path; BadInput if missing or too short."""
    try:
        key = path.read_bytes()
    except OSError as exc:
        raise BadInput(f"cannot read key file {path}: {exc.strerror or exc}") from None
    if len(key) < MIN_KEY_BYTES:
        raise BadInput(
            f"key file {path} holds {len(key)} bytes; use at least {MIN_KEY_BYTES} random "
            f"bytes, e.g. `head -c 32 /dev/urandom > {path}`"
        )
    return key
