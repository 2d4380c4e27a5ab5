"""NAAN rules: betanumeric, no length limit, and the four shared NAANs with their meanings."""

import re
from dataclasses import dataclass
from typing import Literal

from arkfs.ark.errors import NaanSyntaxError
from arkfs.ark.repertoire import BETANUMERIC

_BETANUMERIC = frozenset(BETANUMERIC)
_NAAN = re.compile(f"[{BETANUMERIC}]+")


def is_naan(naan: str) -> bool:
    """Whether naan is one or more betanumeric characters (check_naan says why not)."""
    return _NAAN.fullmatch(naan) is not None


def check_naan(naan: str) -> None:
    """Raise unless naan is one or more betanumeric characters (lowercase, as normalized)."""
    # The Name Assigning Authority Number (NAAN): no upper length bound is imposed, so the
    # 16 octets a receiver must support are accepted.
    if not naan:
        raise NaanSyntaxError("missing NAAN: an ARK looks like ark:NAAN/Name, e.g. ark:12345/x6")
    if is_naan(naan):
        return
    bad = sorted({c for c in naan if c not in _BETANUMERIC})
    if bad:
        raise NaanSyntaxError(
            f"NAAN {naan!r} is not betanumeric ({''.join(bad)!r} not allowed): "
            f"use only digits and the consonants bcdfghjkmnpqrstvwxz"
        )


ASSIGNED_LENGTH = 5


def check_assigned_naan(naan: str) -> None:
    """Raise unless naan has the form of an assigned NAAN, which an ARK is published under:
    five betanumeric characters ("Since 2001, every assigned NAAN has consisted of exactly
    five digits", The Name Assigning Authority Number). Received ARKs keep check_naan."""
    check_naan(naan)
    if len(naan) != ASSIGNED_LENGTH:
        raise NaanSyntaxError(
            f"NAAN {naan!r} is not an assigned NAAN: those are {ASSIGNED_LENGTH} characters, "
            "like 12345 (see https://arks.org to get one; 99999 is for tests)"
        )


@dataclass(frozen=True, slots=True)
class SharedNaan:
    """A NAAN any organization may use on a reserved shoulder, with its immutable meaning."""

    naan: str
    meaning: str
    purpose: str
    expect_to_resolve: Literal["yes", "maybe"]
    long_term: bool


# The Name Assigning Authority Number (NAAN): the shared NAAN table.
SHARED_NAANS: dict[str, SharedNaan] = {
    shared.naan: shared
    for shared in (
        SharedNaan(
            "12345",
            "examples",
            "Example ARKs appearing in documentation; link checkers need not be concerned if "
            "they do not resolve.",
            "maybe",
            False,
        ),
        SharedNaan(
            "99152",
            "terms",
            "Controlled vocabulary and ontology terms, such as metadata element names and "
            "pick-list values; they resolve to term definitions.",
            "yes",
            True,
        ),
        SharedNaan(
            "99166",
            "agents",
            "People, groups and institutions as agents (creators, contributors, publishers, "
            "performers); they resolve to agent definitions.",
            "yes",
            True,
        ),
        SharedNaan(
            "99999",
            "test ids",
            "Test, development or experimental ARKs, often at scale; link checkers need not be "
            "concerned if they do not resolve.",
            "maybe",
            False,
        ),
    )
}
