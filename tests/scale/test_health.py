"""`/healthz` and `/readyz` (#28): a load balancer takes a replica whose database is down out
of its pool only while the database is down."""

import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.support.haproxy import haproxy
from tests.support.server import Server, arkfs_server
from tests.support.services import PostgreSQL, SeaweedFS, new_place

WITHIN = 60.0  # seconds a change of the pool may take


def wait_until(ok: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WITHIN
    while not ok():
        assert time.monotonic() < deadline, f"{what} not within {WITHIN} s"
        time.sleep(0.2)


def test_directory_store_is_alive_and_ready(tmp_path: Path) -> None:
    with arkfs_server(tmp_path / "store", "--open-read") as (url, _proc):
        alive, ready = httpx.get(f"{url}/healthz"), httpx.get(f"{url}/readyz")
    assert (alive.status_code, alive.text) == (200, "ok\n")
    assert (ready.status_code, ready.text) == (200, "ready\n")
    assert ready.headers["cache-control"] == "no-store"


@pytest.mark.slow
def test_balancer_drops_a_replica_only_while_its_database_is_down(
    seaweedfs: SeaweedFS, postgresql: PostgreSQL, own_postgresql: PostgreSQL, tmp_path: Path
) -> None:
    flaky = new_place(seaweedfs, own_postgresql)
    steady = new_place(seaweedfs, postgresql)
    with (
        Server(flaky.location, *flaky.serve_args()[2:], "--open-read") as r0,
        Server(steady.location, *steady.serve_args()[2:], "--open-read") as r1,
        haproxy(tmp_path, [r0.url, r1.url]) as lb,
    ):
        wait_until(lambda: lb.in_pool() == {"r0": True, "r1": True}, "both replicas in")
        own_postgresql.stop()
        ready = httpx.get(f"{r0.url}/readyz", timeout=30)
        assert ready.status_code == 503 and ready.headers["retry-after"] == "1"
        assert httpx.get(f"{r0.url}/healthz", timeout=30).status_code == 200  # alive still
        wait_until(lambda: lb.in_pool() == {"r0": False, "r1": True}, "r0 out")
        for _ in range(6):  # every request through the balancer reaches the ready replica
            assert httpx.get(f"{lb.url}/readyz", timeout=30).status_code == 200
        own_postgresql.start()
        wait_until(lambda: lb.in_pool() == {"r0": True, "r1": True}, "r0 back in")
        assert httpx.get(f"{r0.url}/readyz", timeout=30).status_code == 200
