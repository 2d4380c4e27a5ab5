"""Electronic Resource Citations (ERC): who, what, when and where, in ANVL or JSON.

An ERC record is one ANVL record whose segments each tell a story: the `erc:` segment
about an expression of the object, the `erc-support:` segment about the commitment made
to it (The Electronic Resource Citation (ERC); Overview of THUMP). A segment label with a
value is the short form `erc: who | what | when | where`; empty slots are missing values.
The first who/what/when/where of a segment fill its fields; a repeated one, like every
other element, stays in `other` in order.

The JSON mapping is {"erc": {...}, "erc-support": {...}} with one member per label; a
repeated label maps to a list of its values (so the order between different labels that
repeat is not kept).
"""

import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Self

from arkfs.ark.anvl import Element, read_records, write_record
from arkfs.ark.errors import ErcError

KERNEL = ("who", "what", "when", "where")
ABOUT, SUPPORT = "erc", "erc-support"

Json = dict[str, dict[str, str | list[str]]]

_NULL_CODE = re.compile(r"\(:[a-z]+\)")


class NullCode(StrEnum):
    """The ERC codes that stand for a missing value; text may follow the code."""

    UNAC = "(:unac)"
    UNAL = "(:unal)"
    UNAP = "(:unap)"
    UNAS = "(:unas)"
    UNAV = "(:unav)"
    UNKN = "(:unkn)"
    NONE = "(:none)"
    NULL = "(:null)"
    TBA = "(:tba)"
    ETAL = "(:etal)"

    @property
    def meaning(self) -> str:
        """What the code says about the missing value."""
        return _MEANINGS[self]


_MEANINGS = {
    NullCode.UNAC: "temporarily inaccessible",
    NullCode.UNAL: "unallowed, suppressed intentionally",
    NullCode.UNAP: "not applicable, makes no sense",
    NullCode.UNAS: "value unassigned (e.g., Untitled)",
    NullCode.UNAV: "value unavailable, possibly unknown",
    NullCode.UNKN: "known to be unknown (e.g., Anonymous)",
    NullCode.NONE: "never had a value, never will",
    NullCode.NULL: "explicitly and meaningfully empty",
    NullCode.TBA: "to be assigned or announced later",
    NullCode.ETAL: "too numerous to list (et alia)",
}
_CODES = {code.value: code for code in NullCode}


def null_code(value: str) -> NullCode | None:
    """The null-value code value starts with, if any (e.g. '(:unkn) anonymous')."""
    match = _NULL_CODE.match(value)
    return _CODES.get(match[0]) if match else None


@dataclass
class Segment:
    """One ERC story: the four kernel elements and any other elements, in order."""

    who: str | None = None
    what: str | None = None
    when: str | None = None
    where: str | None = None
    other: list[Element] = field(default_factory=list)

    def __post_init__(self) -> None:
        for label, _ in self.other:
            if label in (ABOUT, SUPPORT):
                raise ErcError(f"{label!r} starts a segment and cannot be an element of one")
            if label in KERNEL and getattr(self, label) is None:
                raise ErcError(f"set {label} itself before repeating {label!r} in other elements")

    def elements(self) -> list[Element]:
        """The kernel elements that are present, then the others."""
        kernel = [(label, getattr(self, label)) for label in KERNEL]
        return [(label, value) for label, value in kernel if value is not None] + self.other


@dataclass
class Erc(Segment):
    """An ERC record: the object's story (its `erc:` segment) and an optional support story."""

    support: Segment | None = None

    def to_anvl(self) -> str:
        """The record as ANVL text in long form."""
        elements = [(ABOUT, ""), *self.elements()]
        if self.support is not None:
            elements += [(SUPPORT, ""), *self.support.elements()]
        return write_record(elements)

    @classmethod
    def from_anvl(cls, text: str) -> Self:
        """Read one ERC record (long or short form) from ANVL text."""
        records = read_records(text)
        if len(records) != 1:
            raise ErcError(f"expected one ANVL record, found {len(records)}")
        segments: dict[str, list[Element]] = {ABOUT: []}
        current = segments[ABOUT]
        seen: set[str] = set()
        for label, value in records[0]:
            if label not in (ABOUT, SUPPORT):
                current.append((label, value))
                continue
            if label in seen:
                raise ErcError(f"segment {label!r} appears twice in one ERC record")
            seen.add(label)
            current = segments.setdefault(label, [])
            current += _short_form(label, value)
        support = segments.get(SUPPORT)
        return cls(
            **_fields(segments[ABOUT]),
            support=None if support is None else Segment(**_fields(support)),
        )

    def to_json(self) -> Json:
        """The JSON mapping: segment label to {element label: value or list of values}."""
        mapping = {ABOUT: _group(self.elements())}
        if self.support is not None:
            mapping[SUPPORT] = _group(self.support.elements())
        return mapping

    @classmethod
    def from_json(cls, data: object) -> Self:
        """Read the JSON mapping that `to_json` writes."""
        if not isinstance(data, dict) or not set(data) <= {ABOUT, SUPPORT}:
            raise ErcError(f"an ERC in JSON is an object with keys {ABOUT!r} and {SUPPORT!r}")
        support = data.get(SUPPORT)
        return cls(
            **_fields(_ungroup(data.get(ABOUT, {}))),
            support=None if support is None else Segment(**_fields(_ungroup(support))),
        )


def _short_form(label: str, value: str) -> list[Element]:
    """The kernel elements of a short-form segment label `erc: who | what | when | where`."""
    if not value:
        return []
    slots = [slot.strip(" \t") for slot in value.split("|")]
    if len(slots) > len(KERNEL):
        raise ErcError(
            f"short form {label}: has {len(slots)} '|'-separated values; at most "
            "4 (who | what | when | where)"
        )
    return [(kernel, slot) for kernel, slot in zip(KERNEL, slots, strict=False) if slot]


def _fields(elements: list[Element]) -> dict[str, Any]:
    """Segment fields: the first of each kernel element, everything else in other."""
    fields: dict[str, Any] = {"other": []}
    for label, value in elements:
        if label in KERNEL and label not in fields:
            fields[label] = value
        else:
            fields["other"].append((label, value))
    return fields


def _group(elements: list[Element]) -> dict[str, str | list[str]]:
    """Elements as a JSON object: one member per label, a list when it repeats."""
    grouped: dict[str, list[str]] = {}
    for label, value in elements:
        grouped.setdefault(label, []).append(value)
    return {label: values[0] if len(values) == 1 else values for label, values in grouped.items()}


def _ungroup(mapping: object) -> list[Element]:
    """The elements of one JSON segment object."""
    if not isinstance(mapping, dict):
        raise ErcError(f"an ERC segment in JSON is an object, not {type(mapping).__name__}")
    elements: list[Element] = []
    for label, value in mapping.items():
        values = value if isinstance(value, list) else [value]
        if not all(isinstance(v, str) for v in values):
            raise ErcError(f"ERC element {label!r} must be a string or a list of strings")
        elements += [(label, v) for v in values]
    return elements
