"""`GET /metrics` of a real `arkfs serve`, parsed with prometheus_client's own parser: who may
read it, and counts that move by exactly the requests, bytes and uploads a test makes."""

from collections.abc import Iterable
from pathlib import Path

import httpx
import trio
from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as openmetrics_families,
)
from prometheus_client.parser import text_string_to_metric_families
from starlette.applications import Starlette

from arkfs.server.app import build_app
from arkfs.server.auth import Authorizer
from arkfs.store.local import LocalStore
from arkfs.xet.hashing import hash_to_string
from arkfs.xet.reconstruction import Reconstruction
from tests.support.archive import publish
from tests.support.server import arkfs_server, put_archive

ARK = "ark:b5072/m3tr1c5"
READ, WRITE = {"Authorization": "Bearer reader"}, {"Authorization": "Bearer writer"}
ARK_ROUTE = "/ark:{rest:path}"
OPENMETRICS = "application/openmetrics-text; version=1.0.0"
FILES = {"a.bin": bytes(range(256)) * 400, "b.txt": b"metrics\n" * 50, "c/a-again.bin": b""}
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(url: str, headers: dict[str, str] | None = None) -> Samples:
    """Every sample of one scrape, by name and sorted labels."""
    r = httpx.get(f"{url}/metrics", headers=headers or READ, timeout=30)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain")
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(r.text)
        for s in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def delta(before: Samples, after: Samples, name: str, **labels: str) -> float:
    return value(after, name, **labels) - value(before, name, **labels)


def xorb_bytes(store: Path) -> int:
    return sum(p.stat().st_size for p in (store / "xorbs").rglob("*") if p.is_file())


def requests(n: int, urls: Iterable[str]) -> None:
    for url in urls:
        for _ in range(n):
            httpx.get(url, headers=READ, timeout=30)


def test_counts_move_by_exactly_the_requests_bytes_and_uploads_made(tmp_path: Path) -> None:
    (tmp_path / "tokens").write_text("reader read\nwriter write\n")
    FILES["c/a-again.bin"] = FILES["a.bin"]  # stored once: deduplicated
    for name, data in FILES.items():
        (tmp_path / "tree" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "tree" / name).write_bytes(data)
    store = tmp_path / "store"
    with arkfs_server(store, "--tokens", str(tmp_path / "tokens")) as (url, _):
        assert httpx.get(f"{url}/metrics").status_code == 401
        bad = httpx.get(f"{url}/metrics", headers={"Authorization": "Bearer nope"})
        assert bad.status_code == 401
        scrape(url, WRITE)  # any valid token reads it
        publish(tmp_path / "tree", ARK, "--server", url, "--token", "writer")
        first = scrape(url)
        total = sum(len(d) for d in FILES.values())
        assert value(first, "arkfs_store_objects", kind="ark") == 1
        assert value(first, "arkfs_store_objects", kind="version") == 1
        assert value(first, "arkfs_store_bytes", kind="xorb") == xorb_bytes(store)
        assert value(first, "arkfs_store_archived_bytes") == total
        assert value(first, "arkfs_uploads_total", kind="bind", outcome="accepted") == 1
        assert value(first, "arkfs_uploads_total", kind="shard", outcome="accepted") == 1

        requests(3, [f"{url}/.well-known/ark"])
        requests(2, [f"{url}/nothing/here"])
        got = httpx.get(f"{url}/{ARK}/a%2Ebin", headers=READ, timeout=30)
        tar = httpx.get(f"{url}/{ARK}/c?tar", headers=READ, timeout=30)
        manifest = httpx.get(f"{url}/{ARK}?format=json", headers=READ, timeout=30).json()
        file_id = manifest["entries"][0]["xet_hash"]
        rec = Reconstruction.from_json(
            httpx.get(f"{url}/v1/reconstructions/{file_id}", headers=READ, timeout=30).json()
        )
        [[fetch, *_]] = rec.fetch.values()
        xorb = httpx.get(fetch.url, headers={"Range": f"bytes={fetch.byte_start}-{fetch.byte_end}"})
        refused = httpx.post(
            f"{url}/v1/xorbs/default/{hash_to_string(bytes(32))}", content=b"junk", headers=WRITE
        )
        not_allowed = put_archive(url, b"", "", "reader", ark=ARK)
        # v2 of the same tree (--allow-empty: unchanged, it binds nothing), no new xorb
        publish(tmp_path / "tree", ARK, "--server", url, "--token", "writer", "--allow-empty")
        second = scrape(url)
    assert got.content == FILES["a.bin"] and tar.status_code == 200 and xorb.status_code == 206
    assert refused.status_code == 400 and not_allowed.status_code == 403

    def moved(name: str, **labels: str) -> float:
        return delta(first, second, name, **labels)

    requests_total = "arkfs_http_requests_total"
    assert moved(requests_total, route="/.well-known/ark", method="GET", status="200") == 3
    assert moved(requests_total, route="unmatched", method="GET", status="404") == 2
    assert moved(requests_total, route=ARK_ROUTE, method="PUT", status="403") == 1
    assert moved(requests_total, route="/v1/xorb-data/{xorb}", method="GET", status="206") == 1
    assert moved(requests_total, route="/metrics", method="GET", status="200") == 1  # first's
    latency = "arkfs_http_request_duration_seconds_count"
    assert moved(latency, route="/.well-known/ark") == 3
    assert moved(latency, route="unmatched") == 2
    file_bytes = len(got.content) + len(tar.content)
    assert moved("arkfs_served_bytes_total", kind="file") == file_bytes
    assert moved("arkfs_served_bytes_total", kind="xorb") == len(xorb.content)
    uploads = "arkfs_uploads_total"
    assert moved(uploads, kind="xorb", outcome="refused") == 1
    assert moved(uploads, kind="bind", outcome="refused") == 1
    assert moved(uploads, kind="bind", outcome="accepted") == 1
    assert moved(uploads, kind="xorb", outcome="accepted") == 0  # v2 needed no new bytes
    assert value(second, "arkfs_store_objects", kind="version") == 2
    assert value(second, "arkfs_store_archived_bytes") == 2 * total
    ratio = value(second, "arkfs_store_dedup_ratio")
    assert ratio == 2 * total / xorb_bytes(store) and ratio > 2


def test_open_read_lets_anyone_scrape_in_either_format(tmp_path: Path) -> None:
    with arkfs_server(tmp_path / "store", "--open-read") as (url, _):
        samples = scrape(url, {})
        om = httpx.get(f"{url}/metrics", headers={"Accept": OPENMETRICS}, timeout=30)
    assert om.headers["content-type"].startswith("application/openmetrics-text")
    names = {f.name for f in openmetrics_families(om.text)}
    assert {"arkfs_http_requests", "arkfs_served_bytes", "arkfs_store_objects"} <= names
    assert value(samples, "arkfs_store_objects", kind="xorb") == 0
    assert ("arkfs_store_dedup_ratio", ()) not in samples  # nothing stored: no ratio


def test_two_servers_in_one_process_keep_their_own_counts(tmp_path: Path) -> None:
    stores = [LocalStore.open(tmp_path / name) for name in ("one", "two")]
    apps = [build_app(s, Authorizer(open_read=True)) for s in stores]

    async def main() -> list[Samples]:
        for _ in range(2):
            await get(apps[0], "/.well-known/ark")
        return [
            {
                (s.name, tuple(sorted(s.labels.items()))): s.value
                for family in text_string_to_metric_families((await get(app, "/metrics")).text)
                for s in family.samples
            }
            for app in apps
        ]

    try:
        one, two = trio.run(main)
    finally:
        for s in stores:
            s.close()
    labels = {"route": "/.well-known/ark", "method": "GET", "status": "200"}
    assert value(one, "arkfs_http_requests_total", **labels) == 2
    assert value(two, "arkfs_http_requests_total", **labels) == 0


async def get(app: Starlette, path: str) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://arkfs") as client:
        return await client.get(path)
