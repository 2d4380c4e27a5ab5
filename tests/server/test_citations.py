"""Citation exports from a real `arkfs serve`, each read by a parser arkfs did not write:
BibTeX (bibtexparser), RIS (rispy), CSL-JSON (rendered by citeproc-py), DataCite XML (lxml
against DataCite's own kernel-4 schema, tests/support/datacite.py); by ?format= and by
Accept, for the archive and for one of its versions, and linked from the landing page."""

import json
import re
from collections.abc import Iterator

import bibtexparser
import httpx
import pytest
import rispy
from citeproc import (
    Citation,
    CitationItem,
    CitationStylesBibliography,
    CitationStylesStyle,
    formatter,
)
from citeproc.source.json import CiteProcJSON
from lxml import etree

from tests.support.archive import WHAT, WHO, make_tree, publish
from tests.support.datacite import datacite_schema
from tests.support.server import arkfs_server

ARK = "ark:b5072/c1t3s"
FORMATS = {
    "bibtex": "application/x-bibtex",
    "ris": "application/x-research-info-systems",
    "csl": "application/vnd.citationstyles.csl+json",
    "datacite": "application/vnd.datacite.datacite+xml",
}


def check_bibtex(text: str, ark: str, version: str) -> None:
    library = bibtexparser.parse_string(text)  # type: ignore[attr-defined]
    assert not library.failed_blocks and len(library.entries) == 1
    fields = library.entries[0].fields_dict
    assert fields["title"].value == WHAT and fields["author"].value == "{" + WHO + "}"
    assert fields["version"].value == version and ark in fields["note"].value
    assert re.fullmatch(r"\d{4}", fields["year"].value)


def check_ris(text: str, ark: str, version: str) -> None:
    (record,) = rispy.loads(text)
    assert record["type_of_reference"] == "DATA" and record["title"] == WHAT
    assert record["authors"] == [WHO] and record["edition"] == version
    assert record["urls"][0].endswith(ark)


def check_csl(text: str, ark: str, version: str) -> None:
    source = CiteProcJSON(json.loads(text))
    style = CitationStylesStyle("harvard-cite-them-right", validate=False)
    bibliography = CitationStylesBibliography(style, source, formatter.plain)
    bibliography.register(Citation([CitationItem(ark)]))
    (rendered,) = [str(item) for item in bibliography.bibliography()]
    assert WHO in rendered and WHAT in rendered and ark in rendered


def check_datacite(text: str, ark: str, version: str) -> None:
    schema = datacite_schema()
    doc = etree.fromstring(text.encode())
    assert schema.validate(doc), schema.error_log
    ns = {"d": "http://datacite.org/schema/kernel-4"}
    assert doc.findtext("d:identifier", namespaces=ns) == ark
    assert doc.findtext("d:creators/d:creator/d:creatorName", namespaces=ns) == WHO
    assert doc.findtext("d:version", namespaces=ns) == version


CHECKS = {"bibtex": check_bibtex, "ris": check_ris, "csl": check_csl, "datacite": check_datacite}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("citations")
    (tmp / "tokens").write_text("w write\n")
    src = make_tree(tmp / "src")
    with arkfs_server(tmp / "store", "--tokens", str(tmp / "tokens"), "--open-read") as (url, _):
        publish(src, ARK, "--server", url, "--token", "w")
        (src / "readme.txt").write_bytes(b"v2\n")
        publish(src, ARK, "--server", url, "--token", "w")
        yield url


@pytest.mark.parametrize("name", list(FORMATS))
@pytest.mark.parametrize(("ark", "version"), [(ARK, "v2"), (f"{ARK}/@v1", "v1")])
def test_each_format_by_name_and_by_accept_parses(
    served: str, name: str, ark: str, version: str
) -> None:
    by_name = httpx.get(f"{served}/{ark}?format={name}", timeout=30)
    by_accept = httpx.get(f"{served}/{ark}", headers={"Accept": FORMATS[name]}, timeout=30)
    for reply in (by_name, by_accept):
        assert reply.status_code == 200, reply.text
        assert reply.headers["content-type"].split(";")[0] == FORMATS[name]
        CHECKS[name](reply.text, ark, version)


def test_the_landing_page_links_each_format(served: str) -> None:
    page = httpx.get(f"{served}/{ARK}", headers={"Accept": "text/html"}, timeout=30).text
    links = re.findall(r'class="cite-format" type="([^"]+)" href="([^"]+)"', page)
    assert sorted(t for t, _ in links) == sorted(FORMATS.values())
    for media_type, href in links:
        reply = httpx.get(served + href.replace("&amp;", "&"), timeout=30)
        assert reply.status_code == 200
        assert reply.headers["content-type"].split(";")[0] == media_type
