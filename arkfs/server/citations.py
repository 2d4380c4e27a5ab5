"""Citation exports of an archive or one of its versions, built from its ERC record:
BibTeX, RIS, CSL-JSON and DataCite XML, each by its media type or by `?format=NAME`.

The ERC's creators (its `creator:` elements with ORCID and affiliation, else who split on
';', as the landing page's JSON-LD reads them), what (the title) and when (its first
four-digit run is the year, else the version's) fill each format, with the licence,
description, keywords and related identifiers where the record has them (ark/metadata.py);
the ARK is the identifier and its URL here the link. DataCite's kernel-4 schema
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
from arkfs.ark import metadata
from arkfs.ark.erc import Erc
from arkfs.ark.identifier import Ark
from arkfs.ark.metadata import Creator

UNKNOWN = ":unav"  # DataCite's code for a value unavailable (the ERC's (:unav))
_YEAR = re.compile(r"\d{4}")
_BIBTEX_SPECIAL = re.compile(r"([\\{}%&$#_~^])")
DATACITE_NS = "http://datacite.org/schema/kernel-4"
DATACITE_LOCATION = "http://schema.datacite.org/meta/kernel-4/metadata.xsd"
XSI = "http://www.w3.org/2001/XMLSchema-instance"
ORCID_URL = "https://orcid.org/"
SPDX_URL = "https://spdx.org/licenses/"
# DataCite relatedIdentifierType (kernel-4 appendix, table 8) by the identifier's prefix.
_IDENTIFIER_TYPES = (
    (re.compile(r"(?i)(doi:|https?://(dx\.)?doi\.org/)?10\.\d{4,9}/\S+"), "DOI"),
    (re.compile(r"(?i)(https?://\S+/)?ark:/?\d+/\S+"), "ARK"),
    (re.compile(r"(?i)(hdl:|https?://hdl\.handle\.net/)\S+"), "Handle"),
    (re.compile(r"(?i)arxiv:\S+"), "arXiv"),
    (re.compile(r"(?i)urn:\S+"), "URN"),
    (re.compile(r"(?i)https?://\S+"), "URL"),
)


@dataclass(frozen=True)
class Cited:
    """What a citation says: who, what, when, which ARK and version, and where it resolves."""

    ark: Ark
    url: str
    creators: list[Creator]
    title: str
    when: str | None
    version: str  # v1, v2, ...
    year: str  # the ERC when's, else the year the version was bound
    publisher: str
    license: str | None = None  # an SPDX expression
    description: str | None = None
    keywords: tuple[str, ...] = ()
    related: tuple[tuple[str, str], ...] = ()  # (DataCite relation type, identifier)

    @property
    def names(self) -> list[str]:
        """The creators' names, in order."""
        return [c.name for c in self.creators]

    @classmethod
    def of(cls, erc: Erc, ark: Ark, url: str, version: VersionInfo) -> "Cited":
        """The citation of ark (resolving at url), version of an archive, from its ERC."""
        creators = metadata.creators(erc) or [
            Creator(w.strip()) for w in (erc.who or "").split(";") if w.strip()
        ]
        publisher = (erc.support.who if erc.support else None) or UNKNOWN
        match = _YEAR.search(erc.when or "")
        year = match[0] if match else str(datetime.fromtimestamp(version.created, UTC).year)
        title = erc.what or str(ark)
        related = []
        for value in metadata.values(erc, metadata.RELATED):
            relation, _, identifier = value.partition("=")
            related.append((relation, identifier))
        return cls(
            ark,
            url,
            creators,
            title,
            erc.when,
            version.name,
            year,
            publisher,
            license=next(iter(metadata.values(erc, metadata.LICENSE)), None),
            description=next(iter(metadata.values(erc, metadata.DESCRIPTION)), None),
            keywords=tuple(metadata.values(erc, metadata.KEYWORD)),
            related=tuple(related),
        )


def identifier_type(identifier: str) -> str | None:
    """The DataCite relatedIdentifierType of identifier, or None if none fits."""
    return next((t for pattern, t in _IDENTIFIER_TYPES if pattern.fullmatch(identifier)), None)


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
            "{" + (" and ".join("{" + _tex(w) + "}" for w in c.names) or "Anonymous") + "}",
        ),
        ("title", "{" + _tex(c.title) + "}"),
        ("year", "{" + c.year + "}"),
        ("version", "{" + c.version + "}"),
        ("publisher", "{" + _tex(c.publisher) + "}"),
        ("howpublished", "{\\url{" + c.url + "}}"),
        ("url", "{" + c.url + "}"),
        ("note", "{ARK: " + _tex(str(c.ark)) + "}"),
        ("abstract", "{" + _tex(c.description or "") + "}"),
        ("keywords", "{" + _tex(", ".join(c.keywords)) + "}"),
        ("copyright", "{" + _tex(c.license or "") + "}"),
    ]
    body = ",\n".join(f"  {name} = {value}" for name, value in fields if value != "{}")
    return f"@misc{{{key},\n{body}\n}}\n"


def ris(c: Cited) -> str:
    """One RIS record of type DATA (dataset)."""
    tags = [("TY", "DATA")] + [("AU", w) for w in c.names]
    tags += [("TI", c.title), ("PY", c.year), ("DA", c.when or ""), ("ET", c.version)]
    tags += [("PB", c.publisher), ("UR", c.url), ("M1", str(c.ark))]
    tags += [("AB", c.description or "")] + [("KW", k) for k in c.keywords]
    tags += [("C1", f"license: {c.license}" if c.license else ""), ("ER", "")]
    return "".join(f"{tag}  - {_line(value)}\n" for tag, value in tags if value or tag == "ER")


def csl_json(c: Cited) -> str:
    """A CSL-JSON array of one dataset item."""
    item: dict[str, object] = {
        "id": str(c.ark),
        "type": "dataset",
        "title": c.title,
        "author": [{"literal": w} for w in c.names],
        "version": c.version,
        "publisher": c.publisher,
        "URL": c.url,
        "issued": {"date-parts": [[int(c.year)]]},
    }
    if c.description:
        item["abstract"] = c.description
    if c.keywords:
        item["keyword"] = ", ".join(c.keywords)
    if c.license:
        item["license"] = c.license
    return json.dumps([item], ensure_ascii=False, indent=2)


def datacite_xml(c: Cited) -> str:
    """A DataCite 4.x resource: identifier, creators (with ORCID and affiliation), titles,
    publisher, year, type, and the subjects, rights, descriptions and related identifiers
    the record has (kernel-4 allows its properties in any order)."""
    ET.register_namespace("", DATACITE_NS)

    def sub(parent: ET.Element, tag: str, text: str = "", **attrs: str) -> ET.Element:
        e = ET.SubElement(parent, f"{{{DATACITE_NS}}}{tag}", attrs)
        e.text = text or None
        return e

    root = ET.Element(f"{{{DATACITE_NS}}}resource")
    root.set(f"{{{XSI}}}schemaLocation", f"{DATACITE_NS} {DATACITE_LOCATION}")
    sub(root, "identifier", str(c.ark), identifierType="ARK")
    creators = sub(root, "creators")
    for who in c.creators or [Creator(UNKNOWN)]:
        creator = sub(creators, "creator")
        sub(creator, "creatorName", who.name)
        if who.orcid:
            sub(
                creator,
                "nameIdentifier",
                who.orcid,
                nameIdentifierScheme="ORCID",
                schemeURI=ORCID_URL,
            )
        if who.affiliation:
            sub(creator, "affiliation", who.affiliation)
    sub(sub(root, "titles"), "title", c.title)
    sub(root, "publisher", c.publisher)
    sub(root, "publicationYear", c.year)
    sub(root, "resourceType", "archive", resourceTypeGeneral="Dataset")
    alternates = sub(root, "alternateIdentifiers")
    sub(alternates, "alternateIdentifier", str(c.ark), alternateIdentifierType="ARK")
    sub(alternates, "alternateIdentifier", c.url, alternateIdentifierType="URL")
    sub(root, "version", c.version)
    if c.keywords:
        subjects = sub(root, "subjects")
        for keyword in c.keywords:
            sub(subjects, "subject", keyword)
    if c.license:
        # One SPDX identifier has a page and an identifier; an expression is only text.
        single = {} if " " in c.license else {"rightsURI": f"{SPDX_URL}{c.license}.html"}
        if single:
            single |= {"rightsIdentifier": c.license, "rightsIdentifierScheme": "SPDX"}
            single["schemeURI"] = SPDX_URL
        sub(sub(root, "rightsList"), "rights", c.license, **single)
    if c.description:
        sub(sub(root, "descriptions"), "description", c.description, descriptionType="Abstract")
    typed = [(r, i, identifier_type(i)) for r, i in c.related]
    if any(t for _, _, t in typed):
        relateds = sub(root, "relatedIdentifiers")
        for relation, identifier, kind in typed:
            if kind:
                sub(
                    relateds,
                    "relatedIdentifier",
                    identifier,
                    relatedIdentifierType=kind,
                    relationType=relation,
                )
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
