"""Every kind of page in headless Chromium at 1280 and 375 pixels: no horizontal scrolling
(the page's scrollWidth is the viewport's), breadcrumbs and the version switcher on every
archive page, the stylesheet served by arkfs, and every link on each page answers 200."""

import base64
import re
from collections.abc import Iterator
from dataclasses import dataclass
from html import unescape
from pathlib import Path

import httpx
import pytest

from tests.support.archive import publish
from tests.support.browser import dump_dom, screenshot
from tests.support.layout import measuring_proxy, widths
from tests.support.server import arkfs_server

pytestmark = pytest.mark.slow
ARK = "ark:b5072/l4y0t"
LONG = "a-file-name-long-enough-to-overflow-a-phone-" * 3 + ".txt"
PNG = base64.b64decode(  # a 1x1 PNG
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
BIG_TEXT = b"".join(b"line %06d " % i + b"x" * 300 + b"\n" for i in range(400))  # > 64 KiB
FILES = {
    "readme.txt": b"hello\n" * 100,
    "table.csv": b"name,value\n" + b"".join(b"row%d,%d\n" % (i, i) for i in range(50)),
    "pixel.png": PNG,
    "big.txt": BIG_TEXT,
    f"sub/{LONG}": b"long\n",
}
PAGES = {
    "root": f"/{ARK}",
    "version": f"/{ARK}/@v1",
    "directory": f"/{ARK}/sub",
    "file": f"/{ARK}/readme%2Etxt?info",
    "csv file": f"/{ARK}/table%2Ecsv?info",
    "image file": f"/{ARK}/pixel%2Epng?info",
    "long text file": f"/{ARK}/big%2Etxt?info",
    "old file": f"/{ARK}/@v1/sub",
    "home": "/",
    "not found": f"/{ARK}/nothing",
    "not found below": f"/{ARK}/sub/gone/deeper",
}
ARCHIVE_PAGES = ("root", "version", "directory", "file", "old file")


@dataclass
class Served:
    url: str
    proxy: str
    tmp: Path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("layout")
    (root / "tokens").write_text("w write\n")
    tree = root / "tree"
    for name, data in FILES.items():
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_bytes(data)
    serve = ("--tokens", str(root / "tokens"), "--open-read")
    with arkfs_server(root / "store", *serve) as (url, _):
        publish(tree, ARK, "--server", url, "--token", "w")
        (tree / "readme.txt").write_bytes(b"second\n")
        publish(tree, ARK, "--server", url, "--token", "w")
        with measuring_proxy(url) as proxy:
            yield Served(url, proxy, root)


@pytest.mark.parametrize("width", [1280, 375])
@pytest.mark.parametrize("page", list(PAGES))
def test_no_horizontal_scrolling(served: Served, page: str, width: int) -> None:
    shot = served.tmp / f"{page.replace(' ', '-')}-{width}.png"
    screenshot(served.url + PAGES[page], shot, served.tmp, width)
    scroll, viewport = widths(served.proxy + PAGES[page], width, served.tmp)
    assert scroll <= viewport, f"{page} at {width} px scrolls: {scroll} > {viewport}"


@pytest.mark.parametrize("page", list(PAGES))
def test_every_link_answers_and_the_stylesheet_is_arkfs_own(served: Served, page: str) -> None:
    dom = dump_dom(served.url + PAGES[page], served.tmp)
    hrefs = [unescape(h) for h in re.findall(r'href="([^"]+)"', dom)]
    assert '<link rel="stylesheet" href="/arkfs.css">' in dom
    for href in hrefs:
        assert not href.startswith("http") or href.startswith(served.url), href  # no CDN
        url = href if href.startswith("http") else served.url + href
        reply = httpx.get(url, timeout=30, follow_redirects=True)
        assert reply.status_code == 200, href
    if page in ("root", "version"):
        assert f"/{PAGES[page].lstrip('/')}?bag" in hrefs  # the BagIt bag, linked
    css = httpx.get(served.url + "/arkfs.css", timeout=30)

    assert css.headers["content-type"].startswith("text/css") and "max-width" in css.text


@pytest.mark.parametrize("page", ARCHIVE_PAGES)
def test_archive_pages_have_breadcrumbs_and_the_version_switcher(served: Served, page: str) -> None:
    dom = dump_dom(served.url + PAGES[page], served.tmp)
    crumbs = re.search(r'<nav id="breadcrumbs".*?</nav>', dom, re.S)
    assert crumbs and ARK in crumbs[0] and 'href="/"' in crumbs[0]
    if page not in ("root", "version"):  # below the archive: it links back up
        assert f'href="/{ARK}' in crumbs[0]
    switcher = re.search(r'<nav id="version-switcher">(.*?)</nav>', dom, re.S)
    assert switcher and f'href="/{ARK}"' in switcher[0]  # the latest, always
    shown = "v1" if "@v1" in PAGES[page] else "v2"
    assert f"<strong>{shown}</strong>" in switcher[0]


@pytest.mark.parametrize(
    ("page", "nearest"), [("not found", ARK), ("not found below", f"{ARK}/sub")]
)
def test_not_found_links_the_nearest_that_exists(served: Served, page: str, nearest: str) -> None:
    dom = dump_dom(served.url + PAGES[page], served.tmp)
    link = re.search(r'<a id="nearest" href="([^"]+)">', dom)
    assert link and unescape(link[1]) == f"/{nearest}"
    assert httpx.get(served.url + link[1], timeout=30).status_code == 200


def test_previews_of_text_csv_and_images(served: Served) -> None:
    dom = dump_dom(served.url + PAGES["file"], served.tmp)
    text = re.search(r'<pre id="preview-text">(.*?)</pre>', dom, re.S)
    assert text and unescape(text[1]) == "second\n"  # the latest version's bytes
    dom = dump_dom(served.url + PAGES["long text file"], served.tmp)
    text = re.search(r'<pre id="preview-text">(.*?)</pre>', dom, re.S)
    assert text and unescape(text[1]).encode() == BIG_TEXT[: 64 * 1024]
    dom = dump_dom(served.url + PAGES["csv file"], served.tmp)
    table = re.search(r'<table id="preview-table">(.*?)</table>', dom, re.S)
    assert table
    rows = re.findall(r"<tr>(.*?)</tr>", table[1])
    assert len(rows) == 20 and re.findall(r"<td>([^<]*)</td>", rows[1]) == ["row0", "0"]
    dom = dump_dom(served.url + PAGES["image file"], served.tmp)
    image = re.search(r'<img id="preview-image" src="([^"]+)"', dom)
    assert image and httpx.get(served.url + unescape(image[1]), timeout=30).content == PNG
