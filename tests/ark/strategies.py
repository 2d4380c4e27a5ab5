"""Hypothesis strategies for ARKs, their many equivalent spellings, file names and ANVL."""

import string
from typing import Any

from hypothesis import strategies as st

from arkfs.ark import Ark
from arkfs.ark.erc import ABOUT, KERNEL, SUPPORT, Erc, Segment
from arkfs.ark.repertoire import BETANUMERIC

UNRESERVED = string.ascii_letters + string.digits + "=~*+@_$"
RESOLVERS = ("", "https://example.org/", "http://example.org/rslvr/", "n2t.net/", "http://h:8080/")
QUERIES = ("", "?info", "?", "??", "?format=json")
HYPHENS = ("-", "\u00ad", *(chr(c) for c in range(0x2010, 0x2016)))
WHITESPACE = (" ", "\n", "\r\n", "\t", "\u00a0", "\n    ")

escapes = st.integers(0, 255).map(lambda octet: f"%{octet:02X}")
segments = st.lists(st.sampled_from(UNRESERVED) | escapes, min_size=1, max_size=8).map("".join)
naans = st.text(alphabet=BETANUMERIC, min_size=1, max_size=16)
arks = st.builds(
    Ark,
    naans,
    segments,
    st.lists(segments, max_size=3).map(tuple),
    st.lists(segments, max_size=3).map(tuple),
    st.sampled_from(RESOLVERS),
    st.sampled_from(QUERIES),
)


@st.composite
def spellings(draw: st.DrawFn, ark: Ark) -> str:
    """A received spelling of ark: any NMA and label form, case, hyphens, wrapping, slashes."""

    def noise(hyphens: bool = True) -> str:
        kinds = ("none", "none", "hyphen", "space") if hyphens else ("none", "space")
        kind = draw(st.sampled_from(kinds))
        if kind == "hyphen":
            return draw(st.sampled_from(HYPHENS))
        return draw(st.sampled_from(WHITESPACE)) if kind == "space" else ""

    def structural(char: str) -> str:
        return char + "".join(draw(st.lists(st.sampled_from("./"), max_size=2)))

    label = draw(st.sampled_from(("ark:", "ark:/", "ARK:", "Ark:/", "aRk:")))
    naan = "".join(draw(st.sampled_from((c, c.upper()))) + noise() for c in ark.naan)
    body = f"{ark.name}{ark.qualifier}"
    tokens: list[str] = []
    i = 0
    while i < len(body):
        if body[i] == "%":
            digits = body[i + 1 : i + 3]
            # No hyphen inside an escape: step 5 would uppercase it instead of a digit
            # ('%-2f' normalizes to '%2f', another ARK than '%2F').
            tokens.append(
                "%" + "".join(noise(False) + draw(st.sampled_from((c, c.lower()))) for c in digits)
            )
            i += 3
        else:
            tokens.append(structural(body[i]) if body[i] in "./" else body[i])
            i += 1
    spelled = "".join(token + noise() for token in tokens)
    lead = draw(st.sampled_from(("", "/", "./", "//")))
    trail = draw(st.sampled_from(("", "/", ".", "./", "//")))
    return f"{draw(st.sampled_from(RESOLVERS))}{label}{naan}/{lead}{spelled}{trail}{ark.query}"


file_names = st.text(
    alphabet=st.characters(codec="utf-8")
    | st.sampled_from([chr(c) for c in range(0xDC80, 0xDD00)]),
    min_size=1,
    max_size=20,
).filter(lambda name: name not in (".", "..") and "/" not in name and "\0" not in name)

anvl_labels = st.text(min_size=1, max_size=12)
anvl_records = st.lists(st.tuples(anvl_labels, st.text(max_size=30)), min_size=1, max_size=6)

_other_labels = anvl_labels.filter(lambda label: label not in (*KERNEL, ABOUT, SUPPORT))
_kernel_values = st.none() | st.text(max_size=20)


@st.composite
def segment_fields(draw: st.DrawFn, unique: bool = False) -> dict[str, Any]:
    """Keyword arguments of a Segment; unique: no label repeats (so JSON keeps order)."""
    labels = st.lists(_other_labels, max_size=4, unique=unique)
    fields: dict[str, Any] = {label: draw(_kernel_values) for label in KERNEL}
    fields["other"] = [(label, draw(st.text(max_size=20))) for label in draw(labels)]
    return fields


@st.composite
def ercs(draw: st.DrawFn, unique: bool = False) -> Erc:
    """An ERC record, with a support segment or not."""
    support = draw(st.none() | segment_fields(unique).map(lambda f: Segment(**f)))
    return Erc(**draw(segment_fields(unique)), support=support)
