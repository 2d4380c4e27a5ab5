"""Content negotiation on the resolver: ANVL for a terminal, HTML errors for a browser, the
home page at `/`."""

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from arkfs.ark.erc import Erc
from tests.support.archive import WHAT, WHO, publish
from tests.support.server import arkfs_server

ARK = "ark:b5072/n3g0"
READ = {"Authorization": "Bearer r"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    root = tmp_path_factory.mktemp("negotiation")
    (root / "tokens").write_text("r read\nw write\n")
    (root / "tree").mkdir()
    (root / "tree" / "x.txt").write_bytes(b"x\n")
    with arkfs_server(root / "store", "--tokens", str(root / "tokens")) as (url, _):
        publish(root / "tree", ARK, "--server", url, "--token", "w")
        yield url, root


def test_text_plain_on_an_archive_is_its_anvl_record(served: tuple[str, Path]) -> None:
    url, _ = served
    r = httpx.get(f"{url}/{ARK}", headers={**READ, "Accept": "text/plain"}, timeout=30)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    erc = Erc.from_anvl(r.text)
    assert (erc.who, erc.what) == (WHO, WHAT)
    assert r.text == httpx.get(f"{url}/{ARK}?info", headers=READ, timeout=30).text
    r = httpx.get(f"{url}/{ARK}", headers={**READ, "Accept": "*/*"}, timeout=30)
    assert r.headers["content-type"].startswith("text/html")


def test_errors_for_a_browser_are_pages(served: tuple[str, Path]) -> None:
    url, _ = served
    browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
    for path, status in ((f"/{ARK}/nope", 404), ("/ark:b5072/unbound", 404), (f"/{ARK}", 401)):
        headers = {"Accept": browser} | (READ if status != 401 else {})
        r = httpx.get(url + path, headers=headers, timeout=30)
        assert r.status_code == status, path
        assert r.headers["content-type"].startswith("text/html"), path
        assert "<h1>" in r.text and ".well-known/ark" in r.text
        r = httpx.get(url + path, headers={k: v for k, v in headers.items() if k != "Accept"})
        assert r.status_code == status and r.headers["content-type"].startswith("text/plain")
    r = httpx.get(url + "/v1/nothing", headers={"Accept": browser}, timeout=30)
    assert r.status_code == 404 and r.json() == {"error": "Not Found"}  # the CAS stays JSON
    escaped = httpx.get(f"{url}/{ARK}/%3Cscript%3E", headers={**READ, "Accept": browser})
    assert escaped.status_code == 404 and "<script>" not in escaped.text


def test_home_page(served: tuple[str, Path]) -> None:
    url, _ = served
    r = httpx.get(url + "/", timeout=30)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert "b5072" in r.text and 'href="/.well-known/ark"' in r.text
    assert httpx.get(url + "/?prefix=ark:", timeout=30).status_code == 401  # listing reads
    r = httpx.get(url + "/?prefix=ark:b5072/", headers=READ, timeout=30)
    assert f'href="/{ARK}"' in r.text
