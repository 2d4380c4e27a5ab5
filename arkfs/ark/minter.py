"""Minting opaque names under a shoulder, each ending in an NCDA check character.

A minted Name is shoulder + blade + check character. The blade is random betanumeric
(digits and consonants, so no vowels and no accidental words), never starts with '0'
(users drop leading zeros), and with its check character never holds more than two
letters in a row (fewer acronyms), as NAAN Namespace Management advises.
"""

import random
import re
from collections.abc import Container

from arkfs.ark.errors import ArkSyntaxError, MintError, ShoulderError
from arkfs.ark.identifier import Ark
from arkfs.ark.ncda import ALPHABET, check_character
from arkfs.ark.normalization import parse

_THREE_LETTERS = re.compile(r"[a-z]{3}")


def parse_shoulder(text: str) -> Ark:
    """The shoulder ARK named by `NAAN/SHOULDER` or `ark:NAAN/SHOULDER` (any spelling)."""
    try:
        shoulder = parse(text if "ark:" in text.lower() else f"ark:{text}")
    except ArkSyntaxError as exc:
        raise ShoulderError(f"bad shoulder {text!r}: {exc}") from exc
    _check_shoulder(shoulder)
    return shoulder


def mint(
    shoulder: Ark,
    count: int = 1,
    *,
    existing: Container[str] = frozenset(),
    length: int = 7,
    rng: random.Random | None = None,
) -> list[Ark]:
    """Mint count new ARKs under shoulder, none in existing (normalized ARK strings)."""
    _check_shoulder(shoulder)
    if length < 1:
        raise ValueError(f"blade length must be at least 1, not {length}")
    rng = rng or random.SystemRandom()
    minted: dict[str, Ark] = {}
    attempts = 100 * count + 1000
    while len(minted) < count and attempts:
        attempts -= 1
        blade = rng.choice(ALPHABET[1:]) + "".join(rng.choices(ALPHABET, k=length - 1))
        name = shoulder.name + blade
        tail = blade + check_character(f"{shoulder.naan}/{name}")
        if _THREE_LETTERS.search(tail):
            continue
        ark = Ark(shoulder.naan, shoulder.name + tail, resolver=shoulder.resolver)
        key = str(ark)
        if key not in existing and key not in minted:
            minted[key] = ark
    if len(minted) < count:
        raise MintError(
            f"found only {len(minted)} of {count} unused names under {shoulder}; "
            "mint with a longer blade"
        )
    return list(minted.values())


def _check_shoulder(shoulder: Ark) -> None:
    """Raise unless shoulder is a bare primordinal shoulder (Optional: Shoulders)."""
    if shoulder.qualifier or shoulder.blade:
        raise ShoulderError(
            f"shoulder {shoulder.name + shoulder.qualifier!r} is not primordinal: use "
            "consonants ending in one digit, e.g. NAAN/fk4 (the first-digit convention)"
        )
