"""The ARK character repertoire and the check that one Name, component or variant obeys it."""

import re
import string

from arkfs.ark.errors import CharacterError, PercentEscapeError

# Character Repertoires: letters, digits and seven characters carry no reserved meaning.
UNRESERVED = frozenset(string.ascii_letters + string.digits + "=~*+@_$")

# The Name Assigning Authority Number (NAAN): digits and consonants, minus the letter 'l'.
BETANUMERIC = "bcdfghjkmnpqrstvwxz0123456789"

# A normalized segment: unreserved characters and %-escapes, their hex digits uppercase
# but where normalization leaves one lowercase ('%-2f' gives '%2f': see normalization.py).
_SEGMENT_PREFIX = re.compile(r"(?:[A-Za-z0-9=~*+@_$]|%[0-9A-Fa-f]{2})*")


def percent_encode(text: str) -> str:
    """Each UTF-8 octet of text as an uppercase %-escape (undecodable file-name bytes kept)."""
    return "".join(f"%{octet:02X}" for octet in text.encode("utf-8", "surrogateescape"))


def check_segment(text: str, what: str) -> None:
    """Raise unless text is one normalized segment (no '/', '.' or '-'); what names it."""
    match = _SEGMENT_PREFIX.match(text)
    end = match.end() if match else 0
    if end == len(text) and text:
        return
    if not text:
        raise CharacterError(f"empty {what}: each part of an ARK needs at least one character")
    if text[end] == "%":
        raise PercentEscapeError(
            f"malformed %-escape {text[end : end + 3]!r} in {what} {text!r}: '%' must be "
            "followed by two hex digits (write a literal '%' as %25)"
        )
    char = text[end]
    raise CharacterError(
        f"character {char!r} (U+{ord(char):04X}) in {what} {text!r} is not allowed there; "
        f"%-encode it as {percent_encode(char)}"
    )
