"""Rich metadata kept as ERC elements beside who/what/when/where: licence, description,
keywords, creators with ORCID and affiliation, and related identifiers.

Each is an element of the record's `erc:` segment, so `?info`, `??` and the extended
attributes show it as they show the rest:

    license: CC-BY-4.0                       (an SPDX license expression)
    description: Sine tables to 12 digits.
    keyword: trigonometry                    (repeated, one per keyword)
    creator: Ada Lovelace; 0000-0002-1825-0097; Analytical Society   (repeated, in order)
    related: IsSupplementTo=doi:10.5061/dryad.x                      (repeated)

The checks follow their sources: SPDX License List expressions (packaging.licenses), the
ORCID identifier's check digit (ISO/IEC 7064 MOD 11-2), and DataCite Metadata Schema 4.5's
relationType vocabulary.
"""

import re
from dataclasses import dataclass, replace

from packaging.licenses import InvalidLicenseExpression, canonicalize_license_expression

from arkfs.ark.erc import Erc
from arkfs.ark.errors import ErcError

LICENSE, DESCRIPTION, KEYWORD, CREATOR, RELATED = (
    "license",
    "description",
    "keyword",
    "creator",
    "related",
)
RICH = (LICENSE, DESCRIPTION, KEYWORD, CREATOR, RELATED)
SINGLE = (LICENSE, DESCRIPTION)  # at most one each; the others repeat

# DataCite Metadata Schema 4.5, relationType (appendix 1, table 7).
RELATIONS = (
    "IsCitedBy",
    "Cites",
    "IsSupplementTo",
    "IsSupplementedBy",
    "IsContinuedBy",
    "Continues",
    "IsDescribedBy",
    "Describes",
    "HasMetadata",
    "IsMetadataFor",
    "HasVersion",
    "IsVersionOf",
    "IsNewVersionOf",
    "IsPreviousVersionOf",
    "IsPartOf",
    "HasPart",
    "IsPublishedIn",
    "IsReferencedBy",
    "References",
    "IsDocumentedBy",
    "Documents",
    "IsCompiledBy",
    "Compiles",
    "IsVariantFormOf",
    "IsOriginalFormOf",
    "IsIdenticalTo",
    "IsReviewedBy",
    "Reviews",
    "IsDerivedFrom",
    "IsSourceOf",
    "IsRequiredBy",
    "Requires",
    "IsObsoletedBy",
    "Obsoletes",
    "IsCollectedBy",
    "Collects",
)
_RELATION = {r.casefold(): r for r in RELATIONS}
_ORCID = re.compile(r"(?:https?://orcid\.org/)?(\d{4}-\d{4}-\d{4}-\d{3}[\dX])")


@dataclass(frozen=True)
class Creator:
    """One creator: a name, and an ORCID iD (0000-0000-0000-000X) and affiliation if given."""

    name: str
    orcid: str | None = None
    affiliation: str | None = None

    def __str__(self) -> str:
        return "; ".join(p for p in (self.name, self.orcid, self.affiliation) if p)


def check_license(text: str) -> str:
    """The SPDX license expression text in its canonical case; ErcError if it names an
    identifier the SPDX License List does not have."""
    try:
        return str(canonicalize_license_expression(text.strip()))
    except InvalidLicenseExpression as exc:
        raise ErcError(
            f"license {text!r} is not an SPDX license identifier or expression ({exc}); "
            "see https://spdx.org/licenses/"
        ) from None


def check_orcid(text: str) -> str:
    """The ORCID iD in text (bare or as https://orcid.org/...), checked; ErcError if it is
    malformed or its check digit is wrong (ISO/IEC 7064 MOD 11-2)."""
    match = _ORCID.fullmatch(text.strip())
    if match is None:
        raise ErcError(f"ORCID {text!r} is not of the form 0000-0000-0000-000X")
    digits = match[1].replace("-", "")
    total = 0
    for d in digits[:-1]:
        total = (total + int(d)) * 2
    check = (12 - total % 11) % 11
    if digits[-1] != ("X" if check == 10 else str(check)):
        raise ErcError(f"ORCID {match[1]} has a wrong check digit (ISO 7064 11,2)")
    return match[1]


def parse_creator(text: str) -> Creator:
    """`NAME[; ORCID][; AFFILIATION]`: a second part that looks like an ORCID iD is one
    (and must check), anything else is the affiliation."""
    parts = [p.strip() for p in text.split(";")]
    if not parts[0]:
        raise ErcError(f"creator {text!r} has no name: NAME[; ORCID][; AFFILIATION]")
    if len(parts) > 3:
        raise ErcError(f"creator {text!r}: at most NAME; ORCID; AFFILIATION")
    rest = [p for p in parts[1:] if p]
    orcid = None
    if rest and re.fullmatch(r"(https?://orcid\.org/)?[\dX-]{15,}", rest[0]):
        orcid = check_orcid(rest.pop(0))
    if len(rest) > 1:
        raise ErcError(f"creator {text!r}: the second part is not an ORCID iD")
    return Creator(parts[0], orcid, rest[0] if rest else None)


def parse_related(text: str) -> tuple[str, str]:
    """`RELATION=IDENTIFIER` with a DataCite relation type (any case), as (Relation, id)."""
    relation, sep, identifier = text.partition("=")
    known = _RELATION.get(relation.strip().casefold())
    if not sep or not identifier.strip():
        raise ErcError(f"related {text!r}: expected RELATION=IDENTIFIER")
    if known is None:
        raise ErcError(
            f"related {text!r}: {relation.strip()!r} is not a DataCite relation type "
            f"(such as IsSupplementTo, IsDerivedFrom, References, IsVersionOf)"
        )
    return known, identifier.strip()


def checked(label: str, value: str) -> str:
    """value of a rich element as it is stored; ErcError if it does not check."""
    if label == LICENSE:
        return check_license(value)
    if label == CREATOR:
        return str(parse_creator(value))
    if label == RELATED:
        return "=".join(parse_related(value))
    if not value.strip():
        raise ErcError(f"{label} is empty")
    return value.strip()


def values(erc: Erc, label: str) -> list[str]:
    """The values of an element of the record's erc: segment, in order."""
    return [v for lab, v in erc.other if lab == label]


def with_values(erc: Erc, label: str, new: list[str]) -> Erc:
    """erc with its label elements replaced by new (checked), where the first of them
    stood (else at the end), so giving the same values again changes nothing."""
    if label in SINGLE and len(new) > 1:
        raise ErcError(f"give one {label}, not {len(new)}")
    at = next((i for i, (lab, _) in enumerate(erc.other) if lab == label), len(erc.other))
    before = [e for e in erc.other[:at] if e[0] != label]
    after = [e for e in erc.other[at:] if e[0] != label]
    return replace(erc, other=before + [(label, checked(label, v)) for v in new] + after)


def check_record(erc: Erc) -> None:
    """ErcError if a rich element of erc (e.g. from an --erc file) does not check."""
    for label in RICH:
        found = values(erc, label)
        if label in SINGLE and len(found) > 1:
            raise ErcError(f"give one {label}, not {len(found)}")
        for value in found:
            checked(label, value)


def creators(erc: Erc) -> list[Creator]:
    """The record's creators, in order (unchecked values kept as names)."""
    out = []
    for value in values(erc, CREATOR):
        try:
            out.append(parse_creator(value))
        except ErcError:
            out.append(Creator(value))
    return out
