"""A real load balancer for tests: Debian's HAProxy in front of `arkfs serve` replicas,
health-checking each with `GET /readyz`, and its stats page to read which are in the pool."""

import csv
import io
import os
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.support.daemons import listening
from tests.support.server import free_port

HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"
CHECK_EVERY_MS = 300  # between two health checks of one replica
CONF = """\
global
    maxconn 200
defaults
    mode http
    timeout connect 2s
    timeout client 30s
    timeout server 30s
    timeout check 3s
frontend front
    bind 127.0.0.1:{port}
    default_backend replicas
frontend stats
    bind 127.0.0.1:{stats_port}
    stats enable
    stats uri /stats
backend replicas
    balance roundrobin
    option httpchk GET /readyz
    http-check expect status 200
    default-server inter {every}ms fall 2 rise 2
{servers}
"""


class Balancer:
    """HAProxy on 127.0.0.1: url is its front; in_pool() says which replicas it uses."""

    def __init__(self, url: str, stats: str) -> None:
        self.url, self._stats = url, stats

    def in_pool(self) -> dict[str, bool]:
        """Each replica's name (r0, r1, ...) and whether HAProxy sends it requests now."""
        text = httpx.get(f"{self._stats};csv", timeout=10).text.lstrip("# ")
        rows = csv.DictReader(io.StringIO(text))
        return {
            r["svname"]: r["status"].startswith("UP")
            for r in rows
            if r["pxname"] == "replicas" and r["svname"] not in ("FRONTEND", "BACKEND")
        }


@contextmanager
def haproxy(folder: Path, replicas: Sequence[str]) -> Iterator[Balancer]:
    """HAProxy balancing over the replicas' base URLs (named r0, r1, ...), stopped at the end."""
    if not os.path.exists(HAPROXY):
        pytest.fail("haproxy is not installed: `make install` installs it")
    port, stats_port = free_port(), free_port()
    servers = "\n".join(
        f"    server r{i} {url.split('://', 1)[1]} check" for i, url in enumerate(replicas)
    )
    conf = folder / "haproxy.cfg"
    conf.write_text(
        CONF.format(port=port, stats_port=stats_port, every=CHECK_EVERY_MS, servers=servers)
    )
    with listening([HAPROXY, "-db", "-f", str(conf)], port, wait=15):
        yield Balancer(f"http://127.0.0.1:{port}", f"http://127.0.0.1:{stats_port}/stats")
