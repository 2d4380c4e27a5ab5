"""Landing pages as headless Chromium renders them: labels, citation, checksums, natural order,
links that resolve, schema.org JSON-LD; a screenshot of each page kind is kept in tmp_path.
"""

import hashlib
import io
import json
import re
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from html import unescape
from pathlib import Path

import httpx
import pytest

from tests.support.archive import PERSISTENCE, WHAT, WHO, publish
from tests.support.browser import dump_dom, screenshot
from tests.support.server import arkfs_server

pytestmark = pytest.mark.slow
ARK = "ark:b5072/p4g3s"
ALL = "all files (tar)"  # the name of the JSON-LD DataDownload of the whole, as a tar
FILES = {  # written in an order that text sort would keep: part10 before part2
    "part10.csv": b"ten\n" * 3000,
    "part1.csv": b"one\n" * 10,
    "part2.csv": b"two\n" * 700,
    "sub/notes v2.txt": b"notes\n",
}


@dataclass
class Site:
    url: str
    tmp: Path

    def dom(self, path: str) -> str:
        return dump_dom(self.url + path, self.tmp)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    root = tmp_path_factory.mktemp("pages")
    (root / "tokens").write_text("w write\n")
    tree = root / "tree"
    for name, data in FILES.items():
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_bytes(data)
    serve = ("--tokens", str(root / "tokens"), "--open-read")
    with arkfs_server(root / "store", *serve) as (url, _):
        publish(tree, ARK, "--server", url, "--token", "w")
        yield Site(url, root)


def texts(dom: str, cls: str) -> list[str]:
    """The text of each element whose class list holds cls (no nested markup inside)."""
    pattern = rf'<(\w+)[^>]*class="[^"]*\b{re.escape(cls)}\b[^"]*"[^>]*>([^<]*)</\1>'
    return [unescape(m[1]) for m in re.findall(pattern, dom)]


def by_id(dom: str, ident: str) -> str:
    """The text of the element with id ident, tags inside dropped."""
    m = re.search(rf'<(\w+)[^>]*id="{re.escape(ident)}"[^>]*>(.*?)</\1>', dom, re.S)
    assert m, ident
    return unescape(re.sub(r"<[^>]+>", "", m[2]))


def hrefs(dom: str) -> list[str]:
    return [unescape(h) for h in re.findall(r'href="([^"]+)"', dom)]


def test_archive_root_page(site: Site) -> None:
    shot = screenshot(f"{site.url}/{ARK}", site.tmp / "root.png", site.tmp)
    assert shot.read_bytes().startswith(b"\x89PNG")
    dom = site.dom(f"/{ARK}")
    erc = httpx.get(f"{site.url}/{ARK}?info&format=json", timeout=30).json()["erc"]["erc"]
    for label in ("Who", "What", "When", "Where"):
        assert f"<dt>{label}</dt>" in dom, label
    about = dom[dom.index('id="about"') : dom.index("</section>")]
    assert texts(about, "who") == [WHO] and texts(about, "what") == [WHAT]
    persistence = dom[dom.index('id="persistence"') :]
    assert "<h2>Persistence statement</h2>" in persistence and PERSISTENCE in persistence
    assert by_id(dom, "citation") == f"{WHO} ({erc['when']}). {WHAT}. {ARK}"
    assert by_id(dom, "url") == f"{site.url}/{ARK}"
    total = sum(len(d) for d in FILES.values())
    assert by_id(dom, "totals").startswith(f"{len(FILES)} files, ")
    assert f'title="{total} bytes"' in dom
    names = [unescape(n) for n in re.findall(r'class="entry"[^>]*>([^<]*)<', dom)]
    assert names == ["part1.csv", "part2.csv", "part10.csv", "sub/"]  # natural order
    top = [d for n, d in FILES.items() if "/" not in n]
    assert sorted(texts(dom, "sha256")) == sorted(hashlib.sha256(d).hexdigest() for d in top)
    assert len(texts(dom, "xet")) == 3
    assert all(re.fullmatch(r"[0-9a-f]{64}", h) for h in texts(dom, "xet"))
    assert f'title="{len(FILES["part10.csv"])} bytes"' in dom
    [ld_text] = re.findall(r'<script type="application/ld\+json">(.*?)</script>', dom, re.S)
    ld = json.loads(ld_text)
    assert ld["@type"] == "Dataset" and ld["name"] == WHAT and ld["identifier"] == ARK
    downloads = {d["name"]: d for d in ld["distribution"]}
    assert set(downloads) == {*FILES, ALL}
    assert tar_files(httpx.get(downloads.pop(ALL)["contentUrl"], timeout=30)) == {
        f"p4g3s-v1/{name}": data for name, data in FILES.items()
    }
    for name, data in FILES.items():
        d = downloads[name]
        assert d["@type"] == "DataDownload" and d["sha256"] == hashlib.sha256(data).hexdigest()
        got = httpx.get(d["contentUrl"], timeout=30)
        assert got.status_code == 200 and got.content == data, name
    for href in hrefs(dom):
        url = href if href.startswith("http") else site.url + href
        assert httpx.get(url, timeout=30, follow_redirects=True).status_code == 200, href
    whole = httpx.get(site.url + by_id_href(dom, "download-all"), timeout=30)
    assert tar_files(whole) == {f"p4g3s-v1/{name}": data for name, data in FILES.items()}


def test_each_checksum_links_to_itself_on_the_file_record(site: Site) -> None:
    dom = site.dom(f"/{ARK}")
    data = FILES["part2.csv"]
    for cls, digest in (("sha256", hashlib.sha256(data).hexdigest()), ("xet", None)):
        links = re.findall(rf'<a class="hash {cls}" href="([^"]+)">([0-9a-f]{{64}})</a>', dom)
        assert len(links) == 3, cls  # one per file shown, each its own link
        [(href, shown)] = [(unescape(h), t) for h, t in links if "part2" in h]
        assert href == f"/{ARK}/part2%2Ecsv?info#{cls}"
        assert digest in (None, shown)
        target = site.dom(href)  # the record page, the checksum there under that id
        assert by_id(target, cls) == shown


def tar_files(reply: httpx.Response) -> dict[str, bytes]:
    """The files of a tar reply, by member name."""
    assert reply.status_code == 200 and reply.headers["content-type"] == "application/x-tar"
    with tarfile.open(fileobj=io.BytesIO(reply.content)) as tar:
        return {
            m.name: tar.extractfile(m).read()  # type: ignore[union-attr]
            for m in tar.getmembers()
            if m.isfile()
        }


def test_directory_page(site: Site) -> None:
    screenshot(f"{site.url}/{ARK}/sub", site.tmp / "directory.png", site.tmp)
    dom = site.dom(f"/{ARK}/sub")
    assert by_id(dom, "ark") == f"{ARK}/sub"
    assert by_id(dom, "totals").startswith("1 file, ")
    assert texts(dom, "sha256") == [hashlib.sha256(FILES["sub/notes v2.txt"]).hexdigest()]
    assert by_id(dom, "citation").endswith(f". {ARK}/sub")
    [ld_text] = re.findall(r'<script type="application/ld\+json">(.*?)</script>', dom, re.S)
    ld = json.loads(ld_text)
    assert ld["@type"] == "Dataset" and ld["identifier"] == f"{ARK}/sub"
    assert ld["isPartOf"]["@id"] == f"{site.url}/{ARK}"
    downloads = {d["name"]: d for d in ld["distribution"]}
    assert set(downloads) == {"sub/notes v2.txt", ALL}
    assert all(d["@type"] == "DataDownload" for d in downloads.values())
    notes = httpx.get(downloads["sub/notes v2.txt"]["contentUrl"], timeout=30)
    assert notes.content == FILES["sub/notes v2.txt"]
    expected = {"sub/notes v2.txt": FILES["sub/notes v2.txt"]}
    assert tar_files(httpx.get(downloads[ALL]["contentUrl"], timeout=30)) == expected
    assert tar_files(httpx.get(site.url + by_id_href(dom, "download-all"), timeout=30)) == expected
    for href in hrefs(dom):
        url = href if href.startswith("http") else site.url + href
        assert httpx.get(url, timeout=30, follow_redirects=True).status_code == 200, href


def test_file_page_is_its_record_in_a_browser(site: Site) -> None:
    file_ark = f"{ARK}/part2%2Ecsv"
    screenshot(f"{site.url}/{file_ark}?info", site.tmp / "file.png", site.tmp)
    dom = site.dom(f"/{file_ark}?info")
    data = FILES["part2.csv"]
    assert texts(dom, "sha256") == [hashlib.sha256(data).hexdigest()]
    [xet] = texts(dom, "xet")
    download = httpx.get(site.url + by_id_href(dom, "download"), timeout=30)
    assert download.content == data and download.headers["etag"] == f'"{xet}"'
    assert f'title="{len(data)} bytes"' in dom
    assert by_id(dom, "citation").endswith(f". {file_ark}")
    # a program that asks for no HTML still gets the ANVL record
    plain = httpx.get(f"{site.url}/{file_ark}?info", timeout=30)
    assert plain.headers["content-type"].startswith("text/plain")


def by_id_href(dom: str, ident: str) -> str:
    m = re.search(rf'id="{re.escape(ident)}" href="([^"]+)"', dom)
    assert m, ident
    return unescape(m[1])


def test_home_page_searches_bound_arks(site: Site) -> None:
    screenshot(f"{site.url}/", site.tmp / "home.png", site.tmp)
    dom = site.dom("/?prefix=ark%3Ab5072%2Fp")
    assert by_id(dom, "naans") == "b5072"
    assert by_id(dom, "count") == "1 found"
    assert re.findall(r'class="ark"[^>]*>([^<]*)<', dom) == [ARK]
    for href in hrefs(dom):
        r = httpx.get(site.url + href, timeout=30)
        assert r.status_code == 200, href
    assert by_id(site.dom("/?prefix=ark%3Ab5072%2Fzz"), "count") == "0 found"


def test_not_found_is_a_page_for_a_browser(site: Site) -> None:
    screenshot(f"{site.url}/{ARK}/nothing", site.tmp / "not-found.png", site.tmp)
    dom = site.dom(f"/{ARK}/nothing")
    assert f"{ARK}/nothing is not in archive {ARK}" in by_id(dom, "message")
    assert "/.well-known/ark" in hrefs(dom)
    r = httpx.get(f"{site.url}/{ARK}/nothing", timeout=30)  # a program gets one line
    assert r.status_code == 404 and r.headers["content-type"].startswith("text/plain")
