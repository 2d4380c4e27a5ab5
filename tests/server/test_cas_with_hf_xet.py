"""hf_xet against `arkfs serve`: it uploads to our CAS and reads back byte-identical."""

import random
import time
from pathlib import Path

import httpx
import msgpack
import pytest

from arkfs.xet.reconstruction import BINARY_TYPE, FOOTERS_FIELD, FOOTERS_HEADER, Reconstruction
from arkfs.xet.trust import recorded_footer
from tests.support.corpus import write_corpus
from tests.support.hfxet import download_file, download_range, upload_files
from tests.support.server import arkfs_server

TOKENS = "reader read\nwriter write\n"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cas")


@pytest.fixture(scope="module")
def served(root: Path):
    (root / "tokens").write_text(TOKENS)
    (root / "files").mkdir()
    paths = write_corpus(root / "files")
    big = root / "files" / "random-24MiB"
    big.write_bytes(random.Random(24).randbytes(24 * 1024 * 1024))
    paths["random-24MiB"] = big
    log = ("--access-log", str(root / "access.log"))
    with arkfs_server(root / "store", "--tokens", str(root / "tokens"), *log) as (url, _proc):
        names = sorted(n for n in paths if n != "empty")
        metas = upload_files(url, [paths[n] for n in names], token="writer")
        (root / "uploads.log").write_text(_logged(root / "access.log", "/shards"))
        yield url, {n: (paths[n], m.hash, m.file_size) for n, m in zip(names, metas, strict=True)}


def _logged(log: Path, until: str) -> str:
    """The access log once a line with `until` is in it (its writer is a thread)."""
    for _ in range(100):
        text = log.read_text() if log.exists() else ""
        if until in text:
            return text
        time.sleep(0.1)
    raise AssertionError(f"no request to {until} in the access log:\n{text}")


def _requests(text: str) -> list[tuple[str, str, int]]:
    """(method, path without query, status) of each access log line."""
    out = []
    for line in text.splitlines():
        _, request, rest = line.split('"', 2)
        method, target = request.split(" ")[:2]
        out.append((method, target.split("?")[0], int(rest.split()[0])))
    return out


def test_upload_takes_current_routes_without_fallback(served, root: Path) -> None:
    """hf_xet 1.8 uploads through xorb grants and /v2/shards: none of its requests gets a
    404 (its cue to fall back), and it never needs the v1 upload routes."""
    requests = _requests((root / "uploads.log").read_text())
    routes = {(m, "/".join(p.split("/")[:3])) for m, p, _ in requests}
    assert ("POST", "/v1/xorb-grants") in routes
    assert ("PUT", "/v1/xorb-uploads") in routes
    assert ("POST", "/v1/xorb-commits") in routes
    assert ("POST", "/v2/shards") in routes
    assert ("POST", "/v1/xorbs") not in routes
    assert ("POST", "/v1/shards") not in routes
    refused = [r for r in requests if r[2] >= 400 and not r[1].startswith("/v1/chunks/")]
    assert refused == []


def test_whole_files_read_back_identical(served, tmp_path: Path) -> None:
    url, files = served
    for name, (path, file_hash, size) in files.items():
        out = tmp_path / name
        download_file(url, file_hash, size, out, token="reader")
        assert out.read_bytes() == path.read_bytes(), name


def test_ranges_read_back_identical(served) -> None:
    url, files = served
    path, file_hash, size = files["random-24MiB"]
    data = path.read_bytes()
    rng = random.Random(1)
    for _ in range(12):
        start = rng.randrange(size)
        end = min(size, start + rng.choice([1, 100, 65536, 200_000, 3_000_000]))
        got = download_range(url, file_hash, size, start, end, token="reader")
        assert got == data[start:end], (start, end)


def test_auth_statuses(served) -> None:
    url, files = served
    _, file_hash, _ = files["text"]
    r = httpx.get(f"{url}/v1/reconstructions/{file_hash}")
    assert r.status_code == 401
    r = httpx.get(f"{url}/v1/reconstructions/{file_hash}", headers={"Authorization": "Bearer nope"})
    assert r.status_code == 401
    r = httpx.post(f"{url}/v1/shards", content=b"x", headers={"Authorization": "Bearer reader"})
    assert r.status_code == 403
    r = httpx.get(
        f"{url}/v1/reconstructions/{file_hash}", headers={"Authorization": "Bearer reader"}
    )
    assert r.status_code == 200
    assert r.headers["cache-control"] == "private, no-cache"


def test_range_past_end_is_416(served) -> None:
    url, files = served
    _, file_hash, size = files["text"]
    r = httpx.get(
        f"{url}/v1/reconstructions/{file_hash}",
        headers={"Authorization": "Bearer reader", "Range": f"bytes={size}-{size + 10}"},
    )
    assert r.status_code == 416


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_footers_extension_only_when_asked(served, version: str) -> None:
    """hf_xet never sends FOOTERS_HEADER, so its replies (the downloads above) are unchanged;
    asked, the reply carries a footer for exactly its xorbs, each one that checks."""
    url, files = served
    _, file_hash, size = files["random-24MiB"]
    headers = {"Authorization": "Bearer reader", "Range": f"bytes=0-{size - 1}"}
    route = f"{url}/{version}/reconstructions/{file_hash}"
    plain = httpx.get(route, headers=headers).json()
    assert FOOTERS_FIELD not in plain
    rec = Reconstruction.from_json(httpx.get(route, headers=headers | {FOOTERS_HEADER: "1"}).json())
    assert rec.terms == Reconstruction.from_json(plain).terms
    assert set(rec.footers) == {t.xorb_hash for t in rec.terms}
    for xh, record in rec.footers.items():
        assert recorded_footer(record, xh).xorb_hash == xh


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_footers_come_in_binary_form_to_a_client_that_takes_it(served, version: str) -> None:
    """A client that asks for footers and accepts BINARY_TYPE gets the same reply in
    msgpack, footers as bytes; Accept alone (as hf_xet or a browser might send it), or a
    client that prefers JSON, gets JSON; the reply varies on Accept for caches."""
    url, files = served
    _, file_hash, size = files["random-24MiB"]
    headers = {"Authorization": "Bearer reader", "Range": f"bytes=0-{size - 1}"}
    route = f"{url}/{version}/reconstructions/{file_hash}"
    binary = {"Accept": f"{BINARY_TYPE}, application/json;q=0.9"}
    as_json = httpx.get(route, headers=headers | {FOOTERS_HEADER: "1"})
    packed = httpx.get(route, headers=headers | binary | {FOOTERS_HEADER: "1"})
    assert packed.headers["content-type"] == BINARY_TYPE
    assert "Accept" in packed.headers["vary"] and "Accept" in as_json.headers["vary"]
    got = Reconstruction.from_json(msgpack.unpackb(packed.content, raw=False))
    assert got == Reconstruction.from_json(as_json.json())
    assert got.footers and len(packed.content) < len(as_json.content)
    for asked in (headers | binary, headers | {FOOTERS_HEADER: "1", "Accept": "*/*"}):
        reply = httpx.get(route, headers=asked)
        assert reply.headers["content-type"].startswith("application/json")
    prefers_json = {"Accept": f"application/json, {BINARY_TYPE};q=0.5", FOOTERS_HEADER: "1"}
    reply = httpx.get(route, headers=headers | prefers_json)
    assert reply.headers["content-type"].startswith("application/json")


def test_grant_upload_needs_the_grants_own_signature(served) -> None:
    """A grant URL is signed apart from xorb read URLs: a read URL's signature, or none,
    cannot store a xorb (403)."""
    url, files = served
    _, file_hash, _ = files["random-24MiB"]
    auth = {"Authorization": "Bearer reader"}
    rec = httpx.get(f"{url}/v1/reconstructions/{file_hash}", headers=auth).json()
    xorb, [fetch] = next(iter(rec["fetch_info"].items()))
    query = fetch["url"].split("?", 1)[1]
    for target in (f"{url}/v1/xorb-uploads/{xorb}?{query}", f"{url}/v1/xorb-uploads/{xorb}"):
        assert httpx.put(target, content=b"x").status_code == 403
    grant = httpx.post(f"{url}/v1/xorb-grants/default/{xorb}", headers=auth)
    assert grant.status_code == 403  # grants need the write scope
    grant = httpx.post(
        f"{url}/v1/xorb-grants/default/{xorb}", headers={"Authorization": "Bearer writer"}
    )
    assert grant.status_code == 200  # stored already: nothing to upload
