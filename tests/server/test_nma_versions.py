"""Versions on the NMA of `arkfs serve`: `ark:NAAN/Name/@vN/...` in every face of the resolver.

One real server for the module; two versions of one archive are bound with the PUT route
over files uploaded by hf_xet: v2 changes one file, adds one, drops one, and its ERC.
"""

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from arkfs.archive.manifest import Entry, Kind, Manifest, build
from arkfs.ark.erc import Erc
from arkfs.xet.hashing import string_to_hash
from tests.support.hfxet import upload_files
from tests.support.server import arkfs_server, put_archive

ARK = "ark:b5072/x6vers"
READ = {"Authorization": "Bearer r"}
ERC1 = Erc(who="First, A.", what="Versions test", when="2024", where=ARK)
ERC2 = Erc(who="Second, B.", what="Versions test", when="2025", where=ARK)
V1 = {"d/a.txt": b"alpha one\n", "d/gone.txt": b"only in v1\n", "same.bin": b"\x01" * 5000}
V2 = {"d/a.txt": b"alpha two!\n", "d/new.txt": b"only in v2\n", "same.bin": b"\x01" * 5000}


@dataclass
class Served:
    url: str

    def get(self, path: str, **headers: str) -> httpx.Response:
        return httpx.get(self.url + path, headers={**READ, **headers}, timeout=30)

    def json(self, path: str) -> Any:
        return self.get(path, Accept="application/json").json()


def _manifest(files: dict[str, tuple[bytes, int]]) -> Manifest:
    entries = [Entry("d", Kind.DIR, 0, 0o755, 0)]
    entries += [Entry(p, Kind.FILE, size, 0o644, 0, h) for p, (h, size) in files.items()]
    entries.append(Entry("d/link", Kind.SYMLINK, 5, 0o777, 0, target="a.txt"))
    return build(ARK, entries, 1.0)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("nma-versions")
    (root / "tokens").write_text("r read\nw write\n")
    contents = {**V1, **V2, "d/a.txt@1": V1["d/a.txt"]}
    paths = []
    for i, data in enumerate(contents.values()):
        paths.append(root / f"f{i}")
        paths[-1].write_bytes(data)
    with arkfs_server(root / "store", "--tokens", str(root / "tokens")) as (url, _):
        infos = upload_files(url, paths, token="w")
        known = {
            data: (string_to_hash(i.hash), i.file_size)
            for data, i in zip(contents.values(), infos, strict=True)
        }
        for files, erc, message in ((V1, ERC1, None), (V2, ERC2, "a changed, gone went, new came")):
            m = _manifest({p: known[d] for p, d in files.items()})
            r = put_archive(url, m.to_msgpack(), erc.to_anvl(), "w", message=message)
            assert r.status_code == 200, r.text
        yield Served(url)


def test_a_version_path_gives_that_versions_bytes(served: Served) -> None:
    for path, data in V1.items():
        name = path.replace(".", "%2E")
        assert served.get(f"/{ARK}/@v1/{name}").content == data, path
        assert served.get(f"/{ARK}/@v1/{path}").content == data, path  # typed plainly
    for path, data in V2.items():
        assert served.get(f"/{ARK}/@v2/{path}").content == data, path
        assert served.get(f"/{ARK}/{path}").content == data, path  # the latest
    assert served.get(f"/{ARK}/@v2/d/gone.txt").status_code == 404
    assert served.get(f"/{ARK}/@v1/d/new.txt").status_code == 404
    r = served.get(f"/{ARK}/@v1/d/a.txt", Range="bytes=6-8")
    assert (r.status_code, r.content) == (206, b"one")


def test_every_equivalent_spelling_of_a_version_path(served: Served) -> None:
    for spelling in (
        f"{ARK}/@v1/d/a%2Etxt",
        "ark:/b5072/x6vers/@v1/d/a.txt",
        "ARK:/B5072/x6-vers/@-v1//d/a.txt/",
    ):
        r = served.get(f"/{spelling}")
        assert r.content == V1["d/a.txt"], spelling
        r = served.get(f"/{spelling}?info")
        assert r.headers["link"] == f'</{ARK}/@v1/d/a%2Etxt>; rel="describes"', spelling


def test_the_latest_says_which_version_answered(served: Served) -> None:
    r = served.get(f"/{ARK}/d/a.txt")
    assert r.headers["content-location"] == f"/{ARK}/@v2/d/a%2Etxt"
    assert served.get(r.headers["content-location"]).content == V2["d/a.txt"]
    assert served.get(f"/{ARK}?info").headers["content-location"] == f"/{ARK}/@v2"
    assert "content-location" not in served.get(f"/{ARK}/@v1/d/a.txt").headers


def test_each_version_has_its_own_erc(served: Served) -> None:
    assert Erc.from_anvl(served.get(f"/{ARK}?info").text) == ERC2
    assert Erc.from_anvl(served.get(f"/{ARK}/@v1??").text) == ERC1
    entry = Erc.from_anvl(served.get(f"/{ARK}/@v1/d/a.txt?info").text)
    assert (entry.who, entry.where) == (ERC1.who, f"{ARK}/@v1/d/a%2Etxt")
    assert Erc.from_anvl(served.get(f"/{ARK}/d?info").text).who == ERC2.who


def test_json_info_of_a_root_carries_its_version_and_the_list(served: Served) -> None:
    latest = served.json(f"/{ARK}?info")
    v1, v2 = latest["versions"]
    assert latest["version"] == v2 and latest["ark"] == ARK
    assert (v1["version"], v1["follows"], v1["message"], v1["files"]) == (1, None, "", 3)
    assert (v2["version"], v2["follows"], v2["files"]) == (2, 1, 3)
    assert v2["message"] == "a changed, gone went, new came"
    assert v2["bytes"] == sum(map(len, V2.values())) and v2["created"] >= v1["created"]
    old = served.json(f"/{ARK}/@v1?info")
    assert old == {"ark": f"{ARK}/@v1", "erc": ERC1.to_json(), "version": v1}  # no list: immutable
    assert "version" not in served.json(f"/{ARK}/@v1/d/a.txt?info")


def test_manifests_and_listings_by_version(served: Served) -> None:
    for version, files in ((1, V1), (2, V2)):
        r = served.get(f"/{ARK}/@v{version}", Accept="application/vnd.arkfs.manifest+msgpack")
        manifest = Manifest.from_msgpack(r.content)
        assert manifest.ark == ARK
        assert sorted(e.path for e in manifest.files) == sorted(files)
        listing = served.json(f"/{ARK}/@v{version}/d")
        assert listing["ark"] == f"{ARK}/@v{version}/d"
        names = {e["name"]: e["ark"] for e in listing["entries"]}
        assert names["a.txt"] == f"{ARK}/@v{version}/d/a%2Etxt"
    r = served.get(f"/{ARK}/@v1/d/link")
    assert (r.status_code, r.headers["location"]) == (302, f"/{ARK}/@v1/d/a%2Etxt")


def test_landing_page_lists_the_versions_with_links(served: Served) -> None:
    for path, shown in ((f"/{ARK}", 2), (f"/{ARK}/@v1", 1)):
        page = served.get(path).text
        links = re.findall(r'href="([^"]+)"', page)
        assert f"/{ARK}/@v1" in links and f"/{ARK}/@v2" in links and f"/{ARK}" in links
        assert f"version {shown}</p>" in page and "a changed, gone went, new came" in page
        for href in links:
            assert served.get(href.removeprefix(served.url)).status_code == 200, href
    assert f"/{ARK}/@v1/d/gone%2Etxt" in served.get(f"/{ARK}/@v1/d").text


def test_unknown_and_malformed_versions(served: Served) -> None:
    for path, status, words in [
        (f"/{ARK}/@v3", 404, f"{ARK} has no version 3 on this server; its versions are 1 to 2"),
        (f"/{ARK}/@v3/d/a.txt?info", 404, "has no version 3"),
        ("/ark:b5072/nothere/@v1", 404, "ark:b5072/nothere is not bound on this server"),
        (f"/{ARK}/@v0", 400, "@v1, @v2"),
        (f"/{ARK}/@v01/d", 400, "@v1, @v2"),
        (f"/{ARK}/@latest", 400, "spelled %40"),
        (f"/{ARK}/d/@v1", 404, "is not in archive"),
    ]:
        r = served.get(path)
        assert r.status_code == status, path
        assert words in r.text and r.text.count("\n") == 1, r.text
