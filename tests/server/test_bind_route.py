"""PUT /ark:NAAN/Name binds an archive only when its manifest, ERC and files check out."""

import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx
import msgpack
import pytest

from arkfs.archive.manifest import Entry, Kind, Manifest, build
from arkfs.ark.erc import Erc
from arkfs.store.local import LocalStore
from arkfs.xet.hashing import ZERO_HASH, string_to_hash
from tests.support.hfxet import upload_files
from tests.support.server import arkfs_server, put_archive

ARK = "ark:12345/x6bind"
ERC = Erc(who="arkfs tests", what="Bind test", when="2024", where=ARK)
WRITE = {"Authorization": "Bearer w"}


@dataclass
class Cas:
    url: str
    store: Path
    files: list[tuple[bytes, int]]  # xet hash, size of each uploaded file


@pytest.fixture(scope="module")
def cas(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cas]:
    root = tmp_path_factory.mktemp("bind")
    (root / "tokens").write_text("r read\nw write\n")
    paths = []
    for i, size in enumerate((1000, 70_000)):
        paths.append(root / f"f{i}")
        paths[-1].write_bytes(random.Random(i).randbytes(size))
    with arkfs_server(root / "store", "--tokens", str(root / "tokens")) as (url, _):
        infos = upload_files(url, paths, token="w")
        yield Cas(url, root / "store", [(string_to_hash(i.hash), i.file_size) for i in infos])


def manifest(ark: str, files: list[tuple[bytes, int]], sha256: bytes | None = None) -> Manifest:
    entries = [
        Entry(f"f{i}.bin", Kind.FILE, size, 0o644, 0, xh, sha256)
        for i, (xh, size) in enumerate(files)
    ]
    return build(ark, [Entry("d", Kind.DIR, 0, 0o755, 0), *entries], created=1.0)


def bindings(cas: Cas) -> dict[str, tuple[bytes, str]]:
    with LocalStore.open(cas.store, create=False) as store:
        return {
            a: (b.manifest, b.erc) for a in store.list_bindings() for b in [store.get_binding(a)]
        }


def version_reply(r: httpx.Response) -> dict[str, object]:
    """A bind reply without its time, which it must have."""
    body = dict(r.json())
    assert isinstance(body.pop("created"), float), body
    return body


def test_bind_then_rebind(cas: Cas) -> None:
    m = manifest(ARK, cas.files[:1])
    r = put_archive(cas.url, m.to_msgpack(), ERC.to_anvl(), "w")
    assert r.status_code == 200, r.text
    first = {"ark": ARK, "version": 1, "follows": None, "message": ""}
    assert version_reply(r) == first | {"files": 1, "bytes": cas.files[0][1]}
    assert bindings(cas)[ARK] == (m.to_msgpack(), ERC.to_anvl())
    m2 = manifest(ARK, cas.files)
    r = put_archive(
        cas.url, m2.to_msgpack(), ERC.to_anvl(), "w", ark="ark:/12345/x6-bind", message="both"
    )
    second = {"ark": ARK, "version": 2, "follows": 1, "message": "both"}
    assert version_reply(r) == second | {"files": 2, "bytes": sum(s for _, s in cas.files)}
    served = httpx.get(f"{cas.url}/{ARK}?format=json", headers={"Authorization": "Bearer r"})
    assert len(Manifest.from_json(served.json()).files) == 2
    first_again = httpx.get(
        f"{cas.url}/{ARK}/@v1?format=json", headers={"Authorization": "Bearer r"}
    )
    assert Manifest.from_json(first_again.json()).entries == m.entries


def test_bad_binds_are_400_and_change_nothing(cas: Cas) -> None:
    other = "ark:12345/x6other"
    (xh, size), (xh2, _) = cas.files
    erc = ERC.to_anvl()
    good = manifest(other, cas.files).to_msgpack()
    cases = [
        (manifest(other, [(bytes(range(32)), 5)]).to_msgpack(), erc, "'f0.bin': file"),
        (manifest(other, [(xh, size + 1)]).to_msgpack(), erc, f"size {size + 1}, but file"),
        (manifest(other, [(xh, size), (xh2, 3)]).to_msgpack(), erc, "entry 'f1.bin'"),
        (manifest(other, [(xh, size)], bytes(32)).to_msgpack(), erc, f"sha256 {'0' * 64}, but"),
        (manifest(ARK, cas.files).to_msgpack(), erc, f"the manifest is of {ARK}"),
        (good, "not an erc record", "ERC record"),
        (b"\x93garbage", erc, "not valid msgpack"),
    ]
    before = bindings(cas)
    for manifest_bytes, erc_text, words in cases:
        r = put_archive(cas.url, manifest_bytes, erc_text, "w", ark=other)
        assert r.status_code == 400, words
        assert r.headers["content-type"].startswith("text/plain")
        assert words in r.text and r.text.count("\n") == 1, r.text
    for body in (
        b"not msgpack",
        msgpack.packb({"manifest": "text", "erc": erc}),
        msgpack.packb({"manifest": good, "erc": erc, "message": 7}),
    ):
        r = httpx.put(f"{cas.url}/{other}", content=body, headers=WRITE)
        assert r.status_code == 400 and "bind body must be msgpack" in r.text
    for part in (f"{other}/part", f"{other}/@v1"):
        r = put_archive(cas.url, good, erc, "w", ark=part)
        assert r.status_code == 400 and "names a part of one" in r.text
    assert bindings(cas) == before


def test_a_version_bound_again_takes_the_stored_manifest_and_only_the_new_erc(cas: Cas) -> None:
    """{again: N, erc, message}: the next version binds version N's manifest as stored (a
    metadata-only version); a version that is not there is 404, a bad body 400."""
    ark = "ark:12345/x6again"
    m = manifest(ark, cas.files)
    assert put_archive(cas.url, m.to_msgpack(), ERC.to_anvl(), "w", ark=ark).status_code == 200
    renamed = Erc(who="arkfs tests", what="Renamed", when="2024", where=ark)

    def again(body: Mapping[str, object]) -> httpx.Response:
        return httpx.put(f"{cas.url}/{ark}", content=msgpack.packb(body), headers=WRITE)

    r = again({"again": 1, "erc": renamed.to_anvl(), "message": "metadata change"})
    assert r.status_code == 200, r.text
    second = {"ark": ark, "version": 2, "follows": 1, "message": "metadata change"}
    assert version_reply(r) == second | {"files": 2, "bytes": sum(s for _, s in cas.files)}
    assert bindings(cas)[ark] == (m.to_msgpack(), renamed.to_anvl())
    before = bindings(cas)
    r = again({"again": 9, "erc": renamed.to_anvl()})
    assert r.status_code == 404 and "has no version 9" in r.text
    for bad in ({"again": 0, "erc": renamed.to_anvl()}, {"again": "1", "erc": renamed.to_anvl()}):
        r = again(bad)
        assert r.status_code == 400 and "bind body must be msgpack" in r.text
    r = again({"again": 1, "erc": "not an erc record"})
    assert r.status_code == 400 and "ERC record" in r.text
    assert (
        httpx.put(
            f"{cas.url}/{ark}", content=msgpack.packb({"again": 1, "erc": ERC.to_anvl()})
        ).status_code
        == 401
    )
    assert bindings(cas) == before


def test_empty_files_need_no_upload(cas: Cas) -> None:
    m = manifest("ark:12345/x6empty", [(ZERO_HASH, 0)])
    r = put_archive(cas.url, m.to_msgpack(), ERC.to_anvl(), "w")
    first = {"ark": "ark:12345/x6empty", "version": 1, "follows": None, "message": ""}
    assert version_reply(r) == first | {"files": 1, "bytes": 0}
