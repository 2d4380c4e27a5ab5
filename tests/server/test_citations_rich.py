"""The rich metadata of a version (licence, description, keywords, creators with ORCID and
affiliation, related identifiers) in every citation export, each read back by a parser
arkfs did not write: DataCite's kernel-4 XSD, bibtexparser, rispy and citeproc-py."""

import json

import bibtexparser
import pytest
import rispy
from lxml import etree

from arkfs.archive.record import VersionInfo
from arkfs.ark.erc import Erc
from arkfs.ark.normalization import parse
from arkfs.server import citations
from tests.support.datacite import datacite_schema

pytestmark = pytest.mark.unit

NS = {"d": "http://datacite.org/schema/kernel-4"}
ERC = Erc(
    who="Lovelace, Ada",
    what="Sine tables",
    when="1843",
    other=[
        ("license", "CC-BY-4.0"),
        ("description", "Sine tables to 12 digits."),
        ("keyword", "trigonometry"),
        ("keyword", "tables"),
        ("creator", "Lovelace, Ada; 0000-0002-1825-0097; Analytical Society"),
        ("creator", "Babbage, Charles"),
        ("related", "IsSupplementTo=doi:10.5061/dryad.x"),
        ("related", "References=https://example.org/paper"),
        ("related", "Cites=a shelf mark"),
    ],
)
VERSION = VersionInfo("ark:12345/x6np1wh8k", 2, 1.7e9, "", 1, 3, 10)
CITED = citations.Cited.of(ERC, parse("ark:12345/x6np1wh8k"), "https://n2t.example/x", VERSION)


def test_datacite_carries_creators_rights_subjects_descriptions_and_relations() -> None:
    doc = etree.fromstring(citations.datacite_xml(CITED).encode())
    schema = datacite_schema()
    assert schema.validate(doc), schema.error_log
    names = doc.findall("d:creators/d:creator", NS)
    assert [n.findtext("d:creatorName", namespaces=NS) for n in names] == [
        "Lovelace, Ada",
        "Babbage, Charles",
    ]
    orcid = names[0].find("d:nameIdentifier", NS)
    assert orcid is not None and orcid.text == "0000-0002-1825-0097"
    assert orcid.get("nameIdentifierScheme") == "ORCID"
    assert names[0].findtext("d:affiliation", namespaces=NS) == "Analytical Society"
    rights = doc.find("d:rightsList/d:rights", NS)
    assert rights is not None and rights.get("rightsIdentifier") == "CC-BY-4.0"
    subjects = [s.text for s in doc.findall("d:subjects/d:subject", NS)]
    assert subjects == ["trigonometry", "tables"]
    assert doc.findtext("d:descriptions/d:description", namespaces=NS) == (
        "Sine tables to 12 digits."
    )
    related = [
        (r.get("relationType"), r.get("relatedIdentifierType"), r.text)
        for r in doc.findall("d:relatedIdentifiers/d:relatedIdentifier", NS)
    ]  # an identifier of no DataCite type stays in the ERC only
    assert related == [
        ("IsSupplementTo", "DOI", "doi:10.5061/dryad.x"),
        ("References", "URL", "https://example.org/paper"),
    ]


def test_a_licence_expression_is_rights_text_that_still_validates() -> None:
    erc = Erc(what="t", other=[("license", "MIT OR Apache-2.0")])
    cited = citations.Cited.of(erc, parse("ark:12345/x6np1wh8k"), "https://x/", VERSION)
    doc = etree.fromstring(citations.datacite_xml(cited).encode())
    assert datacite_schema().validate(doc), datacite_schema().error_log
    rights = doc.find("d:rightsList/d:rights", NS)
    assert rights is not None and rights.text == "MIT OR Apache-2.0"
    assert rights.get("rightsURI") is None


def test_bibtex_ris_and_csl_carry_abstract_keywords_and_licence() -> None:
    library = bibtexparser.parse_string(citations.bibtex(CITED))  # type: ignore[attr-defined]
    fields = library.entries[0].fields_dict
    assert fields["abstract"].value == "Sine tables to 12 digits."
    assert fields["keywords"].value == "trigonometry, tables"
    assert fields["author"].value == "{Lovelace, Ada} and {Babbage, Charles}"
    (record,) = rispy.loads(citations.ris(CITED))
    assert record["abstract"] == "Sine tables to 12 digits."
    assert record["keywords"] == ["trigonometry", "tables"]
    assert record["authors"] == ["Lovelace, Ada", "Babbage, Charles"]
    (item,) = json.loads(citations.csl_json(CITED))
    assert item["abstract"] == "Sine tables to 12 digits." and item["license"] == "CC-BY-4.0"
    assert [a["literal"] for a in item["author"]] == ["Lovelace, Ada", "Babbage, Charles"]


def test_who_alone_still_gives_the_creators() -> None:
    cited = citations.Cited.of(
        Erc(who="A. One; B. Two", what="t"), parse("ark:12345/x6np1wh8k"), "u", VERSION
    )
    assert cited.names == ["A. One", "B. Two"] and cited.license is None
