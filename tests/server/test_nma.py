"""The NMA of `arkfs serve`, over HTTP: ?info, negotiation, listings, file bytes, errors.

One real server for the module; its files go into the CAS with hf_xet and the archive is
bound with the PUT route, as a publisher would.
"""

import base64
import dataclasses
import hashlib
import random
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from arkfs.archive.manifest import Entry, Kind, Manifest, build
from arkfs.ark.erc import Erc, Segment
from arkfs.ark.thump import ARKFS_HEADER
from arkfs.xet.hashing import ZERO_HASH, hash_to_string, string_to_hash
from arkfs.xet.xorb import MAX_FOOTER_TAIL, parse_footer
from tests.support.hfxet import upload_files
from tests.support.server import arkfs_server, put_archive

ARK = "ark:b5072/x6np1wh8k"
READ = {"Authorization": "Bearer r"}
MTIME = 1_700_000_000 * 10**9
ERC = Erc(
    who="Kunze, John",
    what="Test archive",
    when="2024",
    where=ARK,
    support=Segment(who="arkfs tests", what="Temporary", when="2024", where="https://example.org/"),
)


@dataclass
class Served:
    url: str
    manifest: Manifest
    contents: dict[str, bytes]  # manifest path -> bytes of each file

    def get(
        self, path: str, headers: dict[str, str] | None = None, **kwargs: Any
    ) -> httpx.Response:
        """GET path with the read token (and any other headers)."""
        return httpx.get(self.url + path, headers={**READ, **(headers or {})}, timeout=30, **kwargs)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("nma")
    (root / "tokens").write_text("r read\nw write\n")
    rng = random.Random(40)
    contents = {
        "c3/s5.v7.xsl": rng.randbytes(300_000),
        "data.bin": rng.randbytes(2_500_000),
        "docs/read me.txt": b"hello, archive\n" * 100,
    }
    files = root / "files"
    files.mkdir()
    paths = []
    for i, data in enumerate(contents.values()):
        paths.append(files / str(i))
        paths[-1].write_bytes(data)
    with arkfs_server(root / "store", "--tokens", str(root / "tokens")) as (url, _):
        infos = upload_files(url, paths, token="w")
        entries = [
            Entry("c3", Kind.DIR, 0, 0o755, MTIME),
            Entry("docs", Kind.DIR, 0, 0o755, MTIME),
            Entry("empty", Kind.FILE, 0, 0o644, MTIME, ZERO_HASH),
            Entry("link", Kind.SYMLINK, 12, 0o777, MTIME, target="c3/s5.v7.xsl"),
            Entry("outside", Kind.SYMLINK, 9, 0o777, MTIME, target="../../etc"),
        ]
        for (path, data), info in zip(contents.items(), infos, strict=True):
            sha = hashlib.sha256(data).digest()
            xh = string_to_hash(info.hash)
            entries.append(Entry(path, Kind.FILE, len(data), 0o644, MTIME, xh, sha))
        manifest = build(ARK, entries, created=1_700_000_000.5)
        r = put_archive(url, manifest.to_msgpack(), ERC.to_anvl(), "w")
        assert r.status_code == 200, r.text
        contents["empty"] = b""
        yield Served(url, manifest, contents)


def curl(*args: str) -> bytes:
    return subprocess.run(
        ["curl", "-s", "-f", "--path-as-is", "-H", "Authorization: Bearer r", *args],
        capture_output=True,
        check=True,
        timeout=30,
    ).stdout


# --- ?info and THUMP ----------------------------------------------------------------------


def test_info_inflections_answer_the_erc_as_anvl(served: Served) -> None:
    for inflection in ("?info", "??"):
        r = served.get(f"/{ARK}{inflection}")
        assert r.status_code == 200, inflection
        assert r.headers["content-type"].startswith("text/plain")
        assert r.headers["thump-status"] == "0.6 200 OK"
        assert r.headers["link"] == f'</{ARK}>; rel="describes"'
        assert Erc.from_anvl(r.text) == ERC
    assert curl(f"{served.url}/{ARK}?info").decode() == ERC.to_anvl()


def test_info_as_json_by_accept_or_format(served: Served) -> None:
    by_accept = served.get(f"/{ARK}?info", headers={"Accept": "application/json"})
    by_format = served.get(f"/{ARK}?info&format=json")
    version = by_format.json()["version"]
    assert isinstance(version.pop("created"), float)
    m = served.manifest
    assert version == {
        "version": 1,
        "follows": None,
        "message": "",
        "files": len(m.files),
        "bytes": m.total_size,
    }
    # The root's record: its ERC, the version answering, and every version.
    expected = {"ark": ARK, "erc": ERC.to_json()}
    expected |= {"version": by_format.json()["version"], "versions": [by_format.json()["version"]]}
    for r in (by_accept, by_format):
        assert r.status_code == 200
        assert r.headers["content-type"] == "application/json"
        assert r.headers["thump-status"] == "0.6 200 OK"
        assert r.headers["link"] == f'</{ARK}>; rel="describes"'
        assert r.json() == expected
    assert served.get(f"/{ARK}??", headers={"Accept": "application/json"}).json() == expected


def test_equivalent_spellings_reach_the_same_object(served: Served) -> None:
    spellings = [ARK, "ark:/b5072/x6np1wh8k", "ARK:/B5072/x6np-1wh8k", "ark:b5072/x6-np1-wh8k/"]
    answers = {served.get(f"/{s}?info").text for s in spellings}
    assert answers == {ERC.to_anvl()}
    entry_ark = f"{ARK}/c3/s5%2Ev7%2Exsl"
    for spelling in (
        f"{ARK}/c3/s5.v7.xsl",
        entry_ark,
        "ark:/B5072/x6np-1wh8k/c3/s5%2ev7%2exsl",
    ):
        r = served.get(f"/{spelling}?info")
        assert r.headers["link"] == f'</{entry_ark}>; rel="describes"', spelling
        assert served.get(f"/{spelling}").content == served.contents["c3/s5.v7.xsl"]


def test_sub_object_info_tells_the_entry_story(served: Served) -> None:
    r = served.get(f"/{ARK}/docs/read%20me%2Etxt?info&format=json")
    assert r.json()["ark"] == f"{ARK}/docs/read%20me%2Etxt"
    erc = Erc.from_json(r.json()["erc"])
    assert erc.what == "Test archive: docs/read me.txt"
    assert erc.where == f"{ARK}/docs/read%20me%2Etxt"
    assert erc.who == ERC.who and erc.support == ERC.support
    r = served.get(f"/{ARK}/docs?info")
    assert Erc.from_anvl(r.text).what == "Test archive: docs"


# --- the archive root and directories ---------------------------------------------------------


def test_manifest_by_content_negotiation(served: Served) -> None:
    url = served.url
    for accept in (
        "application/vnd.arkfs.manifest+msgpack",
        "application/msgpack",
        "application/x-msgpack",
        "text/html;q=0.5, application/msgpack",
    ):
        r = served.get(f"/{ARK}", headers={"Accept": accept})
        assert r.status_code == 200, accept
        assert r.headers["vary"] == "Accept"
        assert r.headers["content-type"] in accept
        got = Manifest.from_msgpack(r.content)
        assert (got.cas_url, got.token_url) == (url, url + "/v1/token")
        assert dataclasses.replace(got, cas_url=None, token_url=None) == served.manifest
    for r in (
        served.get(f"/{ARK}", headers={"Accept": "application/json, */*"}),
        served.get(f"/{ARK}?format=json"),
    ):
        assert r.headers["content-type"] == "application/json"
        got = Manifest.from_json(r.json())
        assert (got.cas_url, got.token_url) == (url, url + "/v1/token")
        assert dataclasses.replace(got, cas_url=None, token_url=None) == served.manifest


def hrefs(page: str) -> list[str]:
    return re.findall(r'href="([^"]+)"', page)


def test_landing_page_shows_erc_and_links_the_root(served: Served) -> None:
    browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
    for accept in (None, browser, "*/*"):
        r = served.get(f"/{ARK}", headers={"Accept": accept} if accept else {})
        assert r.headers["content-type"].startswith("text/html"), accept
    page = r.text
    assert page.index("Test archive") < page.index("<table")
    assert '<dt>Who</dt><dd class="who">Kunze, John</dd>' in page  # labelled, not raw ANVL
    links = hrefs(page)
    for name in ("c3", "docs", "data%2Ebin", "empty", "link"):
        assert f"/{ARK}/{name}" in links and f"/{ARK}/{name}?info" in links
    assert f"{served.url}/{ARK}" in links  # the resolvable URL of the citation
    for href in links:
        r = served.get(href.removeprefix(served.url), follow_redirects=True)
        assert r.status_code == (404 if href.endswith("/outside") else 200), href


def test_directory_listing_html_and_json(served: Served) -> None:
    r = served.get(f"/{ARK}/docs")
    assert r.headers["content-type"].startswith("text/html")
    assert f"/{ARK}/docs/read%20me%2Etxt" in hrefs(r.text)
    assert f"/{ARK}" in hrefs(r.text)  # the parent
    r = served.get(f"/{ARK}/docs", headers={"Accept": "application/json"})
    body = r.json()
    assert body["ark"] == f"{ARK}/docs"
    [entry] = body["entries"]
    data = served.contents["docs/read me.txt"]
    assert entry["name"] == "read me.txt"
    assert entry["ark"] == f"{ARK}/docs/read%20me%2Etxt"
    assert entry["size"] == len(data)
    assert entry["sha256"] == hashlib.sha256(data).hexdigest()


# --- file bytes --------------------------------------------------------------------------------


def test_files_whole_with_their_headers(served: Served) -> None:
    for path, data in served.contents.items():
        entry = served.manifest.entry(path)
        assert entry is not None and entry.xet_hash is not None
        ark_path = "/".join(p.replace(" ", "%20").replace(".", "%2E") for p in path.split("/"))
        r = served.get(f"/{ARK}/{ark_path}")
        assert r.status_code == 200, path
        assert r.content == data, path
        assert r.headers["etag"] == f'"{hash_to_string(entry.xet_hash)}"'
        assert r.headers["accept-ranges"] == "bytes"
        if data:
            digest = base64.b64encode(hashlib.sha256(data).digest()).decode()
            assert r.headers["repr-digest"] == f"sha-256=:{digest}:"
    r = served.get(f"/{ARK}/docs/read%20me.txt")
    assert r.headers["content-type"].startswith("text/plain")
    assert curl(f"{served.url}/{ARK}/data.bin") == served.contents["data.bin"]


def test_ranges_read_back_identical(served: Served) -> None:
    data = served.contents["data.bin"]
    size = len(data)
    rng = random.Random(2)
    cases = [(0, 0), (size - 1, size - 1), (0, size - 1), (size - 10, size + 100)]
    cases += [(s, s + rng.choice([1, 1000, 70_000, 900_000])) for s in rng.sample(range(size), 8)]
    for start, last in cases:
        r = served.get(f"/{ARK}/data.bin", headers={"Range": f"bytes={start}-{last}"})
        end = min(last + 1, size)
        assert r.status_code == 206
        assert r.headers["content-range"] == f"bytes {start}-{end - 1}/{size}"
        assert r.content == data[start:end], (start, last)
    r = served.get(f"/{ARK}/data.bin", headers={"Range": "bytes=-5000"})
    assert r.content == data[-5000:]
    r = served.get(f"/{ARK}/data.bin", headers={"Range": f"bytes={size - 7}-"})
    assert r.content == data[-7:]
    assert curl("-r", "100-1099", f"{served.url}/{ARK}/data.bin") == data[100:1100]


def test_range_past_the_end_is_416(served: Served) -> None:
    size = len(served.contents["data.bin"])
    for header in (f"bytes={size}-", f"bytes={size + 5}-{size + 10}"):
        r = served.get(f"/{ARK}/data.bin", headers={"Range": header})
        assert r.status_code == 416
        assert r.headers["content-range"] == f"bytes */{size}"
        assert r.text.startswith(f"{ARK}/data%2Ebin: ")
    assert served.get(f"/{ARK}/empty", headers={"Range": "bytes=0-"}).status_code == 416


def test_head_gives_headers_without_body(served: Served) -> None:
    r = httpx.head(f"{served.url}/{ARK}/data.bin", headers=READ)
    assert r.status_code == 200 and r.content == b""
    assert r.headers["content-length"] == str(len(served.contents["data.bin"]))
    r = httpx.head(f"{served.url}/{ARK}?info", headers=READ)
    assert r.status_code == 200 and r.headers["thump-status"] == "0.6 200 OK"


def test_symlinks_redirect_inside_the_archive_only(served: Served) -> None:
    r = served.get(f"/{ARK}/link")
    assert r.status_code == 302
    assert r.headers["location"] == f"/{ARK}/c3/s5%2Ev7%2Exsl"
    assert (
        served.get(f"/{ARK}/link", follow_redirects=True).content
        == (served.contents["c3/s5.v7.xsl"])
    )
    r = served.get(f"/{ARK}/outside")
    assert r.status_code == 404 and "outside the archive" in r.text


def test_suffix_range_of_a_signed_xorb_url_gives_the_footer(served: Served) -> None:
    entry = served.manifest.entry("data.bin")
    assert entry is not None and entry.xet_hash is not None
    rec = served.get(f"/v2/reconstructions/{hash_to_string(entry.xet_hash)}").json()
    xorb, [fetch, *_] = next(iter(rec["xorbs"].items()))
    whole = httpx.get(fetch["url"])
    size = len(whole.content)
    for n in (1000, MAX_FOOTER_TAIL):
        r = httpx.get(fetch["url"], headers={"Range": f"bytes=-{n}"})
        assert r.status_code == 206
        first = max(size - n, 0)
        assert r.headers["content-range"] == f"bytes {first}-{size - 1}/{size}"
        assert r.content == whole.content[first:]
    footer = parse_footer(r.content, size)
    footer.verify()
    assert hash_to_string(footer.xorb_hash) == xorb
    r = httpx.get(fetch["url"], headers={"Range": "bytes=-0"})
    assert r.status_code == 416 and r.headers["content-range"] == f"bytes */{size}"


# --- errors, discovery, listing ---------------------------------------------------------------


def test_unknown_and_malformed_arks(served: Served) -> None:
    for path, status, words in [
        ("/ark:b5072/nothere", 404, "ark:b5072/nothere is not bound on this server"),
        (f"/{ARK}/c3/nothere", 404, f"{ARK}/c3/nothere is not in archive {ARK}"),
        (f"/{ARK}.v2", 404, f"{ARK}.v2 is not in archive"),
        ("/ark:b5072/x%zz", 400, "malformed %-escape"),
        ("/ark:/", 400, "NAAN"),
        ("/ark:b5072/", 400, "missing Name"),
    ]:
        r = served.get(path)
        assert r.status_code == status, path
        assert r.headers["content-type"].startswith("text/plain")
        assert words in r.text and r.text.count("\n") == 1, r.text


def test_tokens_are_needed(served: Served) -> None:
    r = httpx.get(f"{served.url}/{ARK}?info")
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    assert r.text.count("\n") == 1
    r = httpx.get(f"{served.url}/{ARK}", headers={"Authorization": "Bearer nope"})
    assert r.status_code == 401
    r = httpx.put(f"{served.url}/{ARK}", content=b"x", headers=READ)
    assert r.status_code == 403 and "write needed" in r.text
    assert httpx.get(f"{served.url}/arks").status_code == 401


def test_unknown_routes_are_404_for_hf_xet_fallbacks(served: Served) -> None:
    assert httpx.post(f"{served.url}/v2/xorbs/default/x").status_code == 404
    assert httpx.get(f"{served.url}/v2/file-chunk-hashes/x").status_code == 404


def test_well_known_ark_holds_the_service_path_alone(served: Served) -> None:
    """#23 item 15: `#` comment lines after the path were read by strict clients as part of
    it (IANA Considerations: the file holds the service path); arkfs says so in a header."""
    r = httpx.get(f"{served.url}/.well-known/ark")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain")
    assert r.text == "/\n" and r.text.strip() == "/"
    assert r.headers[ARKFS_HEADER] == "1"


def test_arks_lists_bound_archives_by_prefix(served: Served) -> None:
    assert served.get("/arks").json() == {"arks": [ARK]}
    assert served.get("/arks", params={"prefix": "ark:b5072/"}).json() == {"arks": [ARK]}
    assert served.get("/arks", params={"prefix": "ark:12345/"}).json() == {"arks": []}


def test_info_spells_an_ark_once(served: Served) -> None:
    """#16: `where:` was `.../s5%252Ev7%252Exsl`, %-encoded twice by ANVL."""
    r = served.get(f"/{ARK}/c3/s5.v7.xsl?info")
    assert f"where: {ARK}/c3/s5%2Ev7%2Exsl\n" in r.text and "%25" not in r.text
    assert Erc.from_anvl(r.text).where == f"{ARK}/c3/s5%2Ev7%2Exsl"
    page = served.get(f"/{ARK}/c3", headers={"Accept": "text/html"}).text
    assert f"{ARK}/c3/s5%2Ev7%2Exsl" in page and "%25" not in page
