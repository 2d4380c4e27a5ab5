"""File reconstructions (spec: "File Reconstruction", "Get File Reconstruction").

Terms, the v1 (`fetch_info`) and v2 (`xorbs`) JSON shapes of the CAS API, and range planning:
which terms, trimmed to whole chunks, cover a byte range, and the offset into the first.

An arkfs extension: asked with the FOOTERS_HEADER, a reply also carries the footers of its
xorbs (FOOTERS_FIELD: xorb hash -> base64 footer_record), which saves a reader the round
trips of fetching each xorb's tail. Like the rest of a reply they are hints: a reader checks
each against its xorb hash (trust.py). Other clients neither ask nor see it. A reader that
holds some footers already names them in FOOTERS_HELD_HEADER (the first HELD_DIGITS of
each xorb's hash string), and the reply leaves those out: a footer of 2,000 chunks is about
100 KB, which every reply for a small file in that xorb would otherwise carry again.
"""

import base64
import binascii
import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from arkfs.xet.errors import HashStringError, ReconstructionError
from arkfs.xet.hashing import hash_to_string, string_to_hash

FOOTERS_HEADER = "X-Arkfs-Footers"  # request header: "1" asks for FOOTERS_FIELD
FOOTERS_FIELD = "arkfs_footers"
FOOTERS_HELD_HEADER = "X-Arkfs-Footers-Held"  # request header: footers not to send
# The arkfs extension's binary form of a reply with footers: the same object in msgpack,
# footers as raw bytes (no base64, no JSON escaping: a 1 GiB file's map is ~700 KB).
BINARY_TYPE = "application/vnd.msgpack"
HELD_DIGITS = 16  # hex digits that name a held footer: a clash only costs a fetch
MAX_HELD = 64  # names a server reads from FOOTERS_HELD_HEADER


def held_name(xorb_hash: bytes) -> str:
    """How FOOTERS_HELD_HEADER names the footer of xorb_hash."""
    return hash_to_string(xorb_hash)[:HELD_DIGITS]


def held_header(xorbs: Iterable[bytes]) -> str:
    """The FOOTERS_HELD_HEADER value naming the footers of xorbs (at most MAX_HELD)."""
    return ",".join(held_name(xh) for xh in itertools.islice(xorbs, MAX_HELD))


def held_names(value: str | None) -> frozenset[str]:
    """The footers a FOOTERS_HELD_HEADER value names (at most MAX_HELD; others ignored)."""
    names = (n.strip().lower() for n in (value or "").split(",")[:MAX_HELD])
    return frozenset(n for n in names if len(n) == HELD_DIGITS)


@dataclass(frozen=True, slots=True)
class Term:
    """Chunks [start, end) of one xorb, unpacked_length bytes once decompressed."""

    xorb_hash: bytes
    start: int
    end: int
    unpacked_length: int


@dataclass(frozen=True, slots=True)
class FetchRange:
    """Where to GET chunks [chunk_start, chunk_end) of a xorb: url with Range bytes (inclusive)."""

    url: str
    chunk_start: int
    chunk_end: int
    byte_start: int
    byte_end: int  # inclusive, as in an HTTP Range header

    def covers(self, term: Term) -> bool:
        return self.chunk_start <= term.start and term.end <= self.chunk_end


@dataclass(frozen=True, slots=True)
class Reconstruction:
    """A reconstruction reply: ordered terms, bytes to skip, and fetch ranges per xorb."""

    terms: tuple[Term, ...]
    offset_into_first_range: int
    fetch: dict[bytes, tuple[FetchRange, ...]]
    footers: dict[bytes, bytes] = field(default_factory=dict)  # xorb -> footer_record, unchecked

    @property
    def unpacked_length(self) -> int:
        return sum(t.unpacked_length for t in self.terms)

    def fetch_for(self, term: Term) -> FetchRange:
        """The fetch range that covers a term (Download Protocol, Step 3)."""
        for fr in self.fetch.get(term.xorb_hash, ()):
            if fr.covers(term):
                return fr
        raise ReconstructionError(
            f"no fetch info covers chunks {term.start}..{term.end} "
            f"of xorb {hash_to_string(term.xorb_hash)}"
        )

    def to_v1(self, binary: bool = False) -> dict[str, Any]:
        """The /v1/reconstructions JSON shape (binary: footers as bytes, for BINARY_TYPE)."""
        return self._with_footers(
            {
                "offset_into_first_range": self.offset_into_first_range,
                "terms": [_term_json(t) for t in self.terms],
                "fetch_info": {
                    hash_to_string(h): [
                        {
                            "range": {"start": f.chunk_start, "end": f.chunk_end},
                            "url": f.url,
                            "url_range": {"start": f.byte_start, "end": f.byte_end},
                        }
                        for f in frs
                    ]
                    for h, frs in self.fetch.items()
                },
            },
            binary,
        )

    def to_v2(self, binary: bool = False) -> dict[str, Any]:
        """The /v2/reconstructions JSON shape: one entry per URL, several ranges each
        (binary: footers as bytes, for BINARY_TYPE)."""
        xorbs: dict[str, list[dict[str, Any]]] = {}
        for h, frs in self.fetch.items():
            by_url: dict[str, list[dict[str, Any]]] = {}
            for f in frs:
                by_url.setdefault(f.url, []).append(
                    {
                        "chunks": {"start": f.chunk_start, "end": f.chunk_end},
                        "bytes": {"start": f.byte_start, "end": f.byte_end},
                    }
                )
            xorbs[hash_to_string(h)] = [{"url": u, "ranges": r} for u, r in by_url.items()]
        return self._with_footers(
            {
                "offset_into_first_range": self.offset_into_first_range,
                "terms": [_term_json(t) for t in self.terms],
                "xorbs": xorbs,
            },
            binary,
        )

    def _with_footers(self, body: dict[str, Any], binary: bool) -> dict[str, Any]:
        """body, with FOOTERS_FIELD when there are footers: base64, or bytes if binary."""
        if self.footers:
            body[FOOTERS_FIELD] = {
                hash_to_string(h): f if binary else base64.b64encode(f).decode()
                for h, f in self.footers.items()
            }
        return body

    @classmethod
    def from_json(cls, obj: object) -> "Reconstruction":
        """Parse a v1 or v2 reply (JSON, or BINARY_TYPE decoded), validating types, ranges
        and coverage of every term."""
        try:
            if not isinstance(obj, dict):
                raise ReconstructionError("reply is not a JSON object")
            offset = _nat(obj["offset_into_first_range"], "offset_into_first_range")
            terms = tuple(_term(t) for t in _list(obj["terms"], "terms"))
            if "xorbs" in obj:
                fetch = _fetch_v2(obj["xorbs"])
            else:
                fetch = _fetch_v1(obj.get("fetch_info") or {})
            footers = _footers(obj.get(FOOTERS_FIELD) or {})
        except KeyError as exc:
            raise ReconstructionError(f"reconstruction reply lacks field {exc}") from None
        except HashStringError as exc:
            raise ReconstructionError(f"reconstruction reply: {exc}") from None
        return cls._checked(terms, offset, fetch, footers)

    @classmethod
    def _checked(
        cls,
        terms: tuple[Term, ...],
        offset: int,
        fetch: dict[bytes, tuple[FetchRange, ...]],
        footers: dict[bytes, bytes],
    ) -> "Reconstruction":
        """A reconstruction of parsed parts, refused unless the offset is inside the first
        term and some fetch range covers every term."""
        rec = cls(terms, offset, fetch, footers)
        if terms and offset >= terms[0].unpacked_length:
            raise ReconstructionError(
                f"offset_into_first_range {offset} is not inside the first term "
                f"({terms[0].unpacked_length} bytes)"
            )
        for t in terms:
            rec.fetch_for(t)
        return rec


# Many whole files in one request: xet-core's batch route (`GET /v1/reconstructions?
# file_id=...&file_id=...`, BatchQueryReconstructionResponse); the draft has none. The
# reply maps each file the server knows to its terms, beside one fetch_info (and, as an
# arkfs extension, one FOOTERS_FIELD) for them all; a file it does not know is left out.
BATCH_FILES = 100  # file ids one batch request names at most: its URL stays under 8 KiB


def batch_to_json(recs: dict[bytes, Reconstruction], binary: bool = False) -> dict[str, Any]:
    """The batch reply holding recs (whole files: offset 0), binary as in to_v1."""
    fetch: dict[bytes, tuple[FetchRange, ...]] = {}
    footers: dict[bytes, bytes] = {}
    for rec in recs.values():
        for xh, frs in rec.fetch.items():  # one xorb's ranges, merged over the files
            fetch[xh] = tuple(dict.fromkeys(fetch.get(xh, ()) + frs))
        footers |= rec.footers
    body = Reconstruction((), 0, fetch, footers).to_v1(binary)
    del body["offset_into_first_range"], body["terms"]
    body["files"] = {hash_to_string(fh): [_term_json(t) for t in r.terms] for fh, r in recs.items()}
    return body


def parse_batch(obj: object) -> dict[bytes, Reconstruction]:
    """Each file's whole reconstruction from a batch reply (JSON, or BINARY_TYPE decoded),
    checked as from_json checks one; each carries the fetch ranges and footers of its
    own xorbs."""
    try:
        body = _dict(obj, "batch reply")
        fetch = _fetch_v1(body.get("fetch_info") or {})
        footers = _footers(body.get(FOOTERS_FIELD) or {})
        files = {
            string_to_hash(str(fh)): tuple(_term(t) for t in _list(terms, "terms"))
            for fh, terms in _dict(body["files"], "files").items()
        }
    except KeyError as exc:
        raise ReconstructionError(f"batch reply lacks field {exc}") from None
    except HashStringError as exc:
        raise ReconstructionError(f"batch reply: {exc}") from None
    out = {}
    for fh, terms in files.items():
        xorbs = {t.xorb_hash for t in terms}
        own = {xh: frs for xh, frs in fetch.items() if xh in xorbs}
        held = {xh: f for xh, f in footers.items() if xh in xorbs}
        out[fh] = Reconstruction._checked(terms, 0, own, held)
    return out


def _term_json(t: Term) -> dict[str, Any]:
    return {
        "hash": hash_to_string(t.xorb_hash),
        "unpacked_length": t.unpacked_length,
        "range": {"start": t.start, "end": t.end},
    }


def _nat(v: object, name: str) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise ReconstructionError(f"{name} is not a non-negative integer: {v!r}")
    return v


def _list(v: object, name: str) -> list[Any]:
    if not isinstance(v, list):
        raise ReconstructionError(f"{name} is not a list: {type(v).__name__}")
    return v


def _dict(v: object, name: str) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise ReconstructionError(f"{name} is not an object: {type(v).__name__}")
    return v


def _span(v: object, name: str, inclusive: bool) -> tuple[int, int]:
    d = _dict(v, name)
    start, end = _nat(d["start"], f"{name}.start"), _nat(d["end"], f"{name}.end")
    if end < start or (not inclusive and end == start):
        raise ReconstructionError(f"{name} is empty or reversed: {start}..{end}")
    return start, end


def _term(v: object) -> Term:
    d = _dict(v, "term")
    start, end = _span(d["range"], "term range", inclusive=False)
    length = _nat(d["unpacked_length"], "unpacked_length")
    if length == 0:
        raise ReconstructionError("term with unpacked_length 0")
    return Term(string_to_hash(str(d["hash"])), start, end, length)


def _fetch_v1(v: object) -> dict[bytes, tuple[FetchRange, ...]]:
    out = {}
    for key, entries in _dict(v, "fetch_info").items():
        frs = []
        for e in _list(entries, "fetch_info entry"):
            e = _dict(e, "fetch_info entry")
            cs, ce = _span(e["range"], "fetch range", inclusive=False)
            bs, be = _span(e["url_range"], "url_range", inclusive=True)
            frs.append(FetchRange(_url(e["url"]), cs, ce, bs, be))
        out[string_to_hash(key)] = tuple(frs)
    return out


def _fetch_v2(v: object) -> dict[bytes, tuple[FetchRange, ...]]:
    out = {}
    for key, entries in _dict(v, "xorbs").items():
        frs = []
        for e in _list(entries, "xorbs entry"):
            e = _dict(e, "xorbs entry")
            url = _url(e["url"])
            for r in _list(e["ranges"], "ranges"):
                r = _dict(r, "range")
                cs, ce = _span(r["chunks"], "chunks", inclusive=False)
                bs, be = _span(r["bytes"], "bytes", inclusive=True)
                frs.append(FetchRange(url, cs, ce, bs, be))
        out[string_to_hash(key)] = tuple(frs)
    return out


def _footers(v: object) -> dict[bytes, bytes]:
    out = {}
    for key, encoded in _dict(v, FOOTERS_FIELD).items():
        if isinstance(encoded, bytes):  # BINARY_TYPE
            out[string_to_hash(key)] = encoded
            continue
        if not isinstance(encoded, str):
            raise ReconstructionError(f"{FOOTERS_FIELD} entry is neither bytes nor a string")
        try:
            out[string_to_hash(key)] = binascii.a2b_base64(encoded, strict_mode=True)
        except ValueError:  # binascii.Error, or a character beyond ASCII
            raise ReconstructionError(f"{FOOTERS_FIELD} entry is not base64") from None
    return out


def _url(v: object) -> str:
    if not isinstance(v, str) or not v:
        raise ReconstructionError(f"fetch url is not a string: {v!r}")
    return v


def plan_range(
    terms: Sequence[Term],
    chunk_sizes: Callable[[bytes], Sequence[int]],
    start: int,
    end: int,
) -> tuple[list[Term], int]:
    """Range Queries: the terms covering bytes [start, end), trimmed to whole chunks.

    chunk_sizes(xorb_hash) gives the unpacked size of every chunk of a xorb. Returns the
    trimmed terms and offset_into_first_range. Raises ReconstructionError if the range is
    empty or starts past the end of the file.
    """
    if not start < end:
        raise ReconstructionError(f"empty range {start}..{end}")
    out: list[Term] = []
    offset = 0
    pos = 0  # file offset of the current term
    for term in terms:
        term_end = pos + term.unpacked_length
        if term_end <= start:
            pos = term_end
            continue
        if pos >= end:
            break
        sizes = chunk_sizes(term.xorb_hash)
        first, last, cpos = term.start, term.end, pos
        # Skip whole chunks before start, then drop whole chunks from end onwards.
        while first < term.end and cpos + sizes[first] <= start:
            cpos += sizes[first]
            first += 1
        if not out:
            offset = max(start - cpos, 0)
        length = 0
        for i in range(first, term.end):
            if cpos + length >= end:
                last = i
                break
            length += sizes[i]
        else:
            last = term.end
        out.append(Term(term.xorb_hash, first, last, length))
        pos = term_end
    if not out:
        raise ReconstructionError(f"range starts at {start}, past the end of the file ({pos})")
    return out, offset
