"""FAIR Signposting on the resolver: `Link` headers that parse (RFC 8288) and whose targets
answer, and the same links as an RFC 9264 linkset at `?linkset`."""

import re
from collections.abc import Iterator

import httpx
import pytest

from tests.support.archive import publish
from tests.support.server import arkfs_server

ARK = "ark:b5072/s1gn5"
FILES = {"a.csv": b"a,b\n1,2\n", "d/b.txt": b"bee\n", "d/c.bin": b"\0" * 1000}
VOCABULARY = {"https://schema.org/Dataset", "https://schema.org/AboutPage"}
# RFC 8288, section 3: link-value = "<" URI-Reference ">" *( OWS ";" OWS link-param )
_LINK = re.compile(r'\s*<([^>]*)>((?:\s*;\s*[\w*-]+\s*=\s*(?:"[^"]*"|[^;,\s]+))*)\s*(?:,|$)')
_PARAM = re.compile(r';\s*([\w*-]+)\s*=\s*(?:"([^"]*)"|([^;,\s]+))')


def parse_links(header: str) -> list[tuple[str, dict[str, str]]]:
    """An RFC 8288 Link header as (target, params); fails on anything it cannot read."""
    out, pos = [], 0
    while pos < len(header):
        m = _LINK.match(header, pos)
        assert m, f"unparsable Link header at {header[pos : pos + 80]!r}"
        params = {p[0].lower(): p[1] or p[2] for p in _PARAM.findall(m[2])}
        out.append((m[1], params))
        pos = m.end()
    return out


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("signposts")
    (root / "tokens").write_text("w write\n")
    for name, data in FILES.items():
        (root / "tree" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "tree" / name).write_bytes(data)
    extra = ("--tokens", str(root / "tokens"), "--open-read")
    with arkfs_server(root / "store", *extra) as (base, _):
        publish(root / "tree", ARK, "--server", base, "--token", "w")
        yield base


def rels(links: list[tuple[str, dict[str, str]]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for target, params in links:
        out.setdefault(params["rel"], []).append(target)
    return out


def assert_targets_answer(links: list[tuple[str, dict[str, str]]], base: str) -> None:
    for target, params in links:
        if params["rel"] == "type":  # a vocabulary term, not a resource of this resolver
            assert target in VOCABULARY, target
            continue
        assert target.startswith(base + "/"), target
        r = httpx.get(target, timeout=30)
        assert r.status_code == 200, (params["rel"], target)
        if "type" in params:
            assert r.headers["content-type"].split(";")[0] == params["type"], target


def test_archive_root_signposts(url: str) -> None:
    for accept in ("text/html", "application/json", "application/vnd.arkfs.manifest+msgpack"):
        r = httpx.get(f"{url}/{ARK}", headers={"Accept": accept}, timeout=30)
        links = parse_links(r.headers["link"])
        by_rel = rels(links)
        assert by_rel["cite-as"] == [f"{url}/{ARK}"]
        assert by_rel["describedby"] == [f"{url}/{ARK}?info&format=json"]
        assert set(by_rel["type"]) == VOCABULARY
        assert sorted(by_rel["item"]) == [
            f"{url}/{ARK}/a%2Ecsv",
            f"{url}/{ARK}/d/b%2Etxt",
            f"{url}/{ARK}/d/c%2Ebin",
        ]
    assert_targets_answer(links, url)
    described = httpx.get(f"{url}/{ARK}?info&format=json", timeout=30).json()
    assert described["ark"] == ARK


def test_file_and_directory_signposts(url: str) -> None:
    r = httpx.get(f"{url}/{ARK}/d/b%2Etxt", timeout=30)
    assert r.content == FILES["d/b.txt"]
    links = parse_links(r.headers["link"])
    by_rel = rels(links)
    assert by_rel["cite-as"] == [f"{url}/{ARK}/d/b%2Etxt"]
    assert by_rel["collection"] == [f"{url}/{ARK}"]
    assert "item" not in by_rel
    assert_targets_answer(links, url)
    r = httpx.head(f"{url}/{ARK}/d/c%2Ebin", timeout=30)
    assert rels(parse_links(r.headers["link"]))["collection"] == [f"{url}/{ARK}"]
    links = parse_links(httpx.get(f"{url}/{ARK}/d", timeout=30).headers["link"])
    assert sorted(rels(links)["item"]) == [f"{url}/{ARK}/d/b%2Etxt", f"{url}/{ARK}/d/c%2Ebin"]
    assert_targets_answer(links, url)


def test_linkset_holds_the_header_links(url: str) -> None:
    for path in (f"/{ARK}", f"/{ARK}/a%2Ecsv"):
        header = parse_links(httpx.get(url + path, timeout=30).headers["link"])
        r = httpx.get(f"{url}{path}?linkset", timeout=30)
        assert r.headers["content-type"] == "application/linkset+json"
        [context] = r.json()["linkset"]
        assert context["anchor"] == url + path
        from_set = sorted(
            (t["href"], rel) for rel, ts in context.items() if rel != "anchor" for t in ts
        )
        assert from_set == sorted((t, p["rel"]) for t, p in header)


def test_parse_links_rejects_garbage() -> None:
    assert parse_links('<http://x/a>; rel="item"; type="text/csv", <http://x/b>; rel=up') == [
        ("http://x/a", {"rel": "item", "type": "text/csv"}),
        ("http://x/b", {"rel": "up"}),
    ]
    with pytest.raises(AssertionError):
        parse_links('http://x/a; rel="item"')
