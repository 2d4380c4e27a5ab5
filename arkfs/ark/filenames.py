"""File names to ARK qualifier components and back, losslessly.

Letters, digits and `= ~ * + @ _ $` stay as they are; every other character, including
'%', '-', '.', spaces and non-ASCII, becomes uppercase %-escapes of its UTF-8 octets
(undecodable bytes of a POSIX name, held as surrogate escapes by os.fsdecode, too). The
result is a normalized component, so no two file names share an ARK.

A '.' in a file name is never a variant separator: `report.pdf` becomes `report%2Epdf`.
Publishing `x/report.pdf` would declare that an object `x/report` exists with
`report.pdf` as its variant (ARKs that Reveal Object Variants), which the files of an
archive do not promise, and a dotted directory (`v1.2/a`) would have its suffix moved
to the end by normalization. Concealing a reserved character by %-encoding it is what
the spec allows (Normalization and Lexical Equivalence).

A leading '@' is %-encoded too (`@home` becomes `%40home`), although '@' is unreserved
and the spec would leave it as it is: a first component starting with '@' is a version
qualifier (arkfs.ark.version_qualifier), and no file may take that place. For the same reason a
component that starts with a plain '@' is no file name.
"""

import re

from arkfs.ark.errors import FilenameError, PercentEscapeError
from arkfs.ark.repertoire import UNRESERVED, check_segment, percent_encode
from arkfs.ark.version_qualifier import MARK

_ESCAPES = re.compile(r"(?:%[0-9A-F]{2})+")
_UNDECODABLE = re.compile("[\udc80-\udcff]")  # os.fsdecode's escapes of non-UTF-8 bytes
# A '%' that filename_text must escape: one reading would take for a byte's %XX (80 to FF),
# also behind a run of escaped '%'s ('%25E9' is spelled '%2525E9').
_HIGH = "(?=(?:25)*[89A-Fa-f][0-9A-Fa-f])"
_AMBIGUOUS = re.compile("%" + _HIGH)
_TEXT_ESCAPES = re.compile(f"%25{_HIGH}|%([89A-Fa-f][0-9A-Fa-f])")
_LOWER_ESCAPE = re.compile(r"%(?:[0-9A-F][a-f]|[a-f][0-9A-Fa-f])")


def filename_to_qualifier(name: str) -> str:
    """The qualifier component for one file name (not a path)."""
    check_filename(name)
    escaped = "".join(char if char in UNRESERVED else percent_encode(char) for char in name)
    return percent_encode(MARK) + escaped[1:] if name.startswith(MARK) else escaped


def check_filename(name: str) -> None:
    """Raise FilenameError unless filename_to_qualifier can spell name (without spelling
    it: publish checks every name of a tree)."""
    _check_filename(name, name)
    try:
        name.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as exc:
        raise FilenameError(
            f"file name {name!r} holds a lone surrogate that is not an os.fsdecode escape"
        ) from exc


def filename_text(name: str) -> str:
    """A file name (or path) as UTF-8 text for people, losslessly: each byte that is not
    UTF-8 as its %XX (`caf%E9.txt`), and a '%' that would read as one of those as %25;
    every other character as it is (`100%.txt`, `résumé`). text_filename undoes it."""
    escaped = _AMBIGUOUS.sub("%25", name)
    return _UNDECODABLE.sub(lambda byte: f"%{ord(byte[0]) - 0xDC00:02X}", escaped)


def text_filename(text: str) -> str:
    """The file name (as os.fsdecode holds it) that filename_text spelled as text."""
    return _TEXT_ESCAPES.sub(lambda m: chr(0xDC00 + int(m[1], 16)) if m[1] else "%", text)


def qualifier_to_filename(component: str) -> str:
    """The file name of one normalized qualifier component, e.g. from `Ark.components`."""
    check_segment(component, "qualifier component")
    if (lower := _LOWER_ESCAPE.search(component)) is not None:  # one name, one spelling
        raise PercentEscapeError(
            f"{lower[0]!r} in {component!r} names no file: a file name's %-escapes are "
            "spelled with uppercase hex digits"
        )
    if component.startswith(MARK):
        raise FilenameError(
            f"{component!r} is no file name: a component starting with '@' names a version; "
            "a file name starting with '@' is spelled %40"
        )
    name = _ESCAPES.sub(
        lambda run: bytes.fromhex(run[0].replace("%", "")).decode("utf-8", "surrogateescape"),
        component,
    )
    _check_filename(name, component)
    return name


def _check_filename(name: str, source: str) -> None:
    """Raise unless name can be one POSIX file name; source is what it came from."""
    if name in ("", ".", "..") or "/" in name or "\0" in name:
        raise FilenameError(
            f"{source!r} is not a usable file name: it must not be empty, '.' or '..', "
            "nor contain '/' or NUL"
        )
