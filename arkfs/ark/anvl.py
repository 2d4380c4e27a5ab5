"""ANVL (A Name-Value Language) records: `label: value` lines, as ERC metadata uses them.

Reading: a record ends at a blank line; a line starting with '#' is a comment and is
skipped; a line starting with a space or tab continues the previous value (the line
break and the indentation become one space); the label ends at the first ':' and the
value is stripped of surrounding spaces and tabs; the escapes ANVL itself needs (ESCAPES:
'%', line breaks, ':', '#', blanks) are decoded, and any other %XX is text.

Writing: one line per element. So that reading gives back exactly what was written, line
feed and carriage return are %-escaped everywhere, ':' in labels, a '#' that starts a
label, a space or tab at either end of a label or value (The Electronic Resource Citation
(ERC): escape line terminators, and colons in names), and a '%' only where reading would
take it for one of ESCAPES. So a value that is itself %-encoded, such as an ARK
(`ark:12345/x6np1wh8k/c3/s5%2Ev7%2Exsl`), is written as it is spelled, never twice.
"""

import re
from collections.abc import Iterable, Sequence

from arkfs.ark.errors import AnvlError

Element = tuple[str, str]

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
ESCAPES = ("25", "0A", "0D", "3A", "23", "20", "09")  # % LF CR : # space tab
_ESCAPE = "(?:" + "|".join(ESCAPES) + ")"
_VALUE_SPECIALS = re.compile(rf"%(?={_ESCAPE})|[\r\n]", re.IGNORECASE)
_LABEL_SPECIALS = re.compile(rf"%(?={_ESCAPE})|[\r\n:]|^#", re.IGNORECASE)
_ESCAPED = re.compile(rf"%({_ESCAPE})", re.IGNORECASE)
_BLANKS = " \t"


def read_records(text: str) -> list[list[Element]]:
    """Every record in text, each a list of (label, value) in order; comments dropped."""
    records: list[list[Element]] = []
    record: list[tuple[str, list[str]]] = []
    for number, line in enumerate(_LINE_BREAK.split(text), start=1):
        if line.startswith("#"):
            continue
        if not line.strip(_BLANKS):
            if record:
                records.append(_decode(record))
                record = []
        elif line[0] in _BLANKS:
            if not record:
                raise AnvlError(f"line {number}: continuation line with no element before it")
            record[-1][1].append(line.strip(_BLANKS))
        else:
            label, colon, value = line.partition(":")
            if not colon:
                raise AnvlError(f"line {number}: no ':' after the label in {line!r}")
            if not label.strip(_BLANKS):
                raise AnvlError(f"line {number}: empty label before ':' in {line!r}")
            record.append((label.strip(_BLANKS), [value.strip(_BLANKS)]))
    if record:
        records.append(_decode(record))
    return records


def write_record(elements: Iterable[Element], *, comments: Sequence[str] = ()) -> str:
    """One record as ANVL text ending in a newline; join records with a blank line."""
    lines = [f"# {line}" for comment in comments for line in _LINE_BREAK.split(comment)]
    for label, value in elements:
        if not label:
            raise AnvlError(f"empty label for value {value!r}: every ANVL element needs one")
        escaped = _escape(value, _VALUE_SPECIALS)
        lines.append(f"{_escape(label, _LABEL_SPECIALS)}: {escaped}".rstrip(" "))
    return "".join(f"{line}\n" for line in lines)


def _decode(record: list[tuple[str, list[str]]]) -> list[Element]:
    """Unfold continuation lines and decode %-escapes."""
    return [
        (_unescape(label), _unescape(" ".join(p for p in parts if p))) for label, parts in record
    ]


def _unescape(text: str) -> str:
    """Decode the escapes of ESCAPES; any other %XX stays as it is."""
    return _ESCAPED.sub(lambda m: chr(int(m[1], 16)), text)


def _escape(text: str, specials: re.Pattern[str]) -> str:
    """%-escape specials, and a blank at either end that reading would strip."""
    text = specials.sub(lambda match: f"%{ord(match[0]):02X}", text)
    if text and text[0] in _BLANKS:
        text = f"%{ord(text[0]):02X}{text[1:]}"
    if text and text[-1] in _BLANKS:
        text = f"{text[:-1]}%{ord(text[-1]):02X}"
    return text
