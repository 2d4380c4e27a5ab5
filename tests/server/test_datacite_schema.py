"""The DataCite XML export against DataCite's own kernel-4 schema (tests/support/datacite.py),
for records that stretch it: several creators with non-ASCII names, markup in the title,
no creator or publisher known; and the schema is a real judge: it refuses what DataCite
refuses."""

import pytest
from lxml import etree

from arkfs.ark.metadata import Creator
from arkfs.ark.normalization import parse
from arkfs.server.citations import UNKNOWN, Cited, datacite_xml
from tests.support.datacite import NAMESPACE, datacite_schema

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`

ARK = parse("ark:12345/x6np1wh8k/@v2")


def cited(creators: list[str], title: str, publisher: str = "Lab of Sines") -> Cited:
    who = [Creator(name) for name in creators]
    return Cited(ARK, "https://arks.example.org/ark:12345/x6np1wh8k/@v2", who, title,
                 "2024", "v2", "2024", publisher)  # fmt: skip


@pytest.mark.parametrize(
    "record",
    [
        cited(["Hopper, Grace"], "Sine tables"),
        cited(["Gödel, Kurt", "Noether, Emmy", "Лебедев, Сергей"], "Tables <of> sines & cosines"),
        cited([], "ark:12345/x6np1wh8k", publisher=UNKNOWN),
    ],
)
def test_the_export_is_valid_datacite(record: Cited) -> None:
    schema = datacite_schema()
    doc = etree.fromstring(datacite_xml(record).encode())
    assert schema.validate(doc), schema.error_log
    ns = {"d": NAMESPACE}
    names = doc.xpath("d:creators/d:creator/d:creatorName/text()", namespaces=ns)
    assert names == (record.names or [UNKNOWN])
    assert doc.findtext("d:titles/d:title", namespaces=ns) == record.title


@pytest.mark.parametrize(
    "damage",
    [
        ('resourceTypeGeneral="Dataset"', 'resourceTypeGeneral="Archive"'),  # not DataCite's
        ("<publicationYear>2024</publicationYear>", "<publicationYear>24</publicationYear>"),
        ('alternateIdentifierType="URL"', ""),  # a required attribute
    ],
)
def test_the_schema_refuses_what_datacite_refuses(damage: tuple[str, str]) -> None:
    text = datacite_xml(cited(["Hopper, Grace"], "Sine tables"))
    assert damage[0] in text
    doc = etree.fromstring(text.replace(damage[0], damage[1]).encode())
    assert not datacite_schema().validate(doc)
