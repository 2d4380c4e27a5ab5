"""Citation exports of an archive or one of its versions, built from its ERC record:
BibTeX, RIS, CSL-JSON and DataCite XML, each by its media type or by `?format=NAME`.

The ERC's who (creators separated by ';', as the landing page's JSON-LD reads them), what
(the title) and when (its first four-digit run is the year, else the version's) fill each
format; the ARK is the identifier and its URL here the link. DataCite's kernel-4 schema
allows only a DOI as `identifier`, so the record names the ARK with identifierType "ARK"
and again as an alternateIdentifier: a DataCite client minting a DOI replaces the first.
"""

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from arkfs.archive.record import VersionInfo
from arkfs.ark.erc import Erc
from arkfs.ark.identifier import Ark

UNKNOWN = ":unav"  # DataCite's code for a value unavailable (the ERC's (:unav))
_YEAR = re.compile(r"\d{4}")
_BIBTEX_SPECIAL = re.compile(r"([\\{}%&$#_~^])")
DATACITE_NS = "http://datacite.org/schema/kernel-4"
DATACITE_LOCATION = "http://schema.datacite.org/meta/kernel-4/metadata.xsd"
XSI = "http://www.w3.org/2001/XMLSchema-instance"


@dataclass(frozen=True)
class Cited:
    """What a citation says: who, what, when, which ARK and version, and where it resolves."""

    ark: Ark
    url: str
    creators: list[str]
    title: str
    when: str | None
    version: str  # v1, v2, ...
    year: str  # the ERC when's, else the year the version was bound
    publisher: str

    @classmethod
    def of(cls, erc: Erc, ark: Ark, url: str, version: VersionInfo) -> "Cited":
        """The citation of ark (resolving at url), version of an archive, from its ERC."""
        creators = [w.strip() for w in (erc.who or "").split(";") if w.strip()]
        publisher = (erc.support.who if erc.support else None) or UNKNOWN
        match = _YEAR.search(erc.when or "")
        year = match[0] if match else str(datetime.fromtimestamp(version.created, UTC).year)
        title = erc.what or str(ark)
        return cls(ark, url, creators, title, erc.when, version.name, year, publisher)


def _line(text: str) -> str:
    """text on one line: a newline would end a field of RIS or BibTeX."""
    return " ".join(text.split())


def _tex(text: str) -> str:
    return _BIBTEX_SPECIAL.sub(r"\\\1", _line(text))


def bibtex(c: Cited) -> str:
    """One @misc entry (BibTeX has no dataset type; BibLaTeX reads @misc too)."""
    key = re.sub(r"[^A-Za-z0-9]+", "_", f"{c.ark.naan}_{c.ark.name}_{c.version}")
    fields = [
        (
            "author",
            "{" + (" and ".join("{" + _tex(w) + "}" for w in c.creators) or "Anonymous") + "}",
        ),
        ("title", "{" + _tex(c.title) + "}"),
        ("year", "{" + c.year + "}"),
        ("version", "{" + c.version + "}"),
        ("publisher", "{" + _tex(c.publisher) + "}"),
        ("howpublished", "{\\url{" + c.url + "}}"),
        ("url", "{" + c.url + "}"),
        ("note", "{ARK: " + _tex(str(c.ark)) + "}"),
    ]
    body = ",\n".join(f"  {name} = {value}" for name, value in fields if value != "{}")
    return f"@misc{{{key},\n{body}\n}}\n"


def ris(c: Cited) -> str:
    """One RIS record of type DATA (dataset)."""
    tags = [("TY", "DATA")] + [("AU", w) for w in c.creators]
    tags += [("TI", c.title), ("PY", c.year), ("DA", c.when or ""), ("ET", c.version)]
    tags += [("PB", c.publisher), ("UR", c.url), ("M1", str(c.ark)), ("ER", "")]
    return "".join(f"{tag}  - {_line(value)}\n" for tag, value in tags if value or tag == "ER")


def csl_json(c: Cited) -> str:
    """A CSL-JSON array of one dataset item."""
    item: dict[str, object] = {
        "id": str(c.ark),
        "type": "dataset",
        "title": c.title,
        "author": [{"literal": w} for w in c.creators],
        "version": c.version,
        "publisher": c.publisher,
        "URL": c.url,
        "issued": {"date-parts": [[int(c.year)]]},
    }
    return json.dumps([item], ensure_ascii=False, indent=2)


def datacite_xml(c: Cited) -> str:
    """A DataCite 4.x resource: identifier, creators, titles, publisher, year, type."""
    ET.register_namespace("", DATACITE_NS)

    def sub(parent: ET.Element, tag: str, text: str = "", **attrs: str) -> ET.Element:
        e = ET.SubElement(parent, f"{{{DATACITE_NS}}}{tag}", attrs)
        e.text = text or None
        return e

    root = ET.Element(f"{{{DATACITE_NS}}}resource")
    root.set(f"{{{XSI}}}schemaLocation", f"{DATACITE_NS} {DATACITE_LOCATION}")
    sub(root, "identifier", str(c.ark), identifierType="ARK")
    creators = sub(root, "creators")
    for who in c.creators or [UNKNOWN]:
        sub(sub(creators, "creator"), "creatorName", who)
    sub(sub(root, "titles"), "title", c.title)
    sub(root, "publisher", c.publisher)
    sub(root, "publicationYear", c.year)
    sub(root, "resourceType", "archive", resourceTypeGeneral="Dataset")
    alternates = sub(root, "alternateIdentifiers")
    sub(alternates, "alternateIdentifier", str(c.ark), alternateIdentifierType="ARK")
    sub(alternates, "alternateIdentifier", c.url, alternateIdentifierType="URL")
    sub(root, "version", c.version)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


@dataclass(frozen=True)
class Format:
    """A citation format: its `?format=` name, media type, link text and writer."""

    name: str
    media_type: str
    label: str
    render: Callable[[Cited], str]


FORMATS = (
    Format("bibtex", "application/x-bibtex", "BibTeX", bibtex),
    Format("ris", "application/x-research-info-systems", "RIS", ris),
    Format("csl", "application/vnd.citationstyles.csl+json", "CSL-JSON", csl_json),
    Format("datacite", "application/vnd.datacite.datacite+xml", "DataCite XML", datacite_xml),
)
BY_NAME = {f.name: f for f in FORMATS}
BY_MEDIA_TYPE = {f.media_type: f for f in FORMATS}
MEDIA_TYPES = tuple(BY_MEDIA_TYPE)
