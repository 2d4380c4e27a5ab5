"""Xorbs (spec: "Xorb Format"): build, serialize, parse and validate, decode chunk ranges."""

import operator
import struct
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from arkfs.xet.compression import ChunkData, Compression, compress, compress_best, decompress
from arkfs.xet.constants import (
    HASH_SIZE,
    MAX_CHUNK_SIZE,
    MAX_XORB_ACCEPTED,
    MAX_XORB_CHUNKS,
    MAX_XORB_SIZE,
)
from arkfs.xet.errors import CompressionError, HashMismatchError, XorbFormatError
from arkfs.xet.hashing import chunk_hash, hash_to_string, packed_root, xorb_hash

CHUNK_HEADER_SIZE = 8
_U32 = struct.Struct("<I")
_TRAILER = struct.Struct("<III16s")  # num_chunks, hashes offset, boundary offset, reserved

_MAIN_IDENT, _MAIN_VERSION = b"XETBLOB", 1
_HASH_IDENT, _HASH_VERSION = b"XBLBHSH", 0
_BOUND_IDENT, _BOUND_VERSION = b"XBLBBND", 1
_MAIN_SIZE = 7 + 1 + HASH_SIZE
_SECTION_HEAD_SIZE = 7 + 1 + 4


def footer_size(num_chunks: int) -> int:
    """Bytes of the CasObjectInfo footer for num_chunks chunks (without the length trailer)."""
    return _MAIN_SIZE + 2 * _SECTION_HEAD_SIZE + (HASH_SIZE + 8) * num_chunks + _TRAILER.size


# The smallest tail that holds the footer of any xorb: a reader may fetch this suffix first.
MAX_FOOTER_TAIL = footer_size(MAX_XORB_CHUNKS) + 4


@dataclass(frozen=True, slots=True)
class ChunkHeader:
    """Chunk Header Format: 8 bytes before each chunk's payload."""

    compressed_size: int
    compression: int
    uncompressed_size: int

    def pack(self) -> bytes:
        """The 8 header bytes."""
        c, u = self.compressed_size, self.uncompressed_size
        return bytes((0, c & 0xFF, (c >> 8) & 0xFF, c >> 16, self.compression)) + bytes(
            (u & 0xFF, (u >> 8) & 0xFF, u >> 16)
        )


@dataclass(frozen=True, slots=True)
class XorbFooter:
    """CasObjectInfo Footer: the chunk hashes and both kinds of chunk end offsets."""

    xorb_hash: bytes
    chunk_hashes: tuple[bytes, ...]
    packed_ends: tuple[int, ...]  # end of each chunk in the serialized chunk region
    unpacked_ends: tuple[int, ...]  # end of each chunk in the concatenated uncompressed data

    @property
    def num_chunks(self) -> int:
        return len(self.chunk_hashes)

    def packed_range(self, start: int, end: int) -> tuple[int, int]:
        """Byte range [first, last) of chunks [start, end) in the serialized xorb."""
        return (self.packed_ends[start - 1] if start else 0), self.packed_ends[end - 1]

    def unpacked_size(self, index: int) -> int:
        """Uncompressed size of chunk index."""
        return self.unpacked_ends[index] - (self.unpacked_ends[index - 1] if index else 0)

    def chunk_sizes(self) -> list[int]:
        """Uncompressed size of every chunk."""
        return _steps(self.unpacked_ends)

    def verify(self) -> None:
        """Check that the chunk hashes and sizes give the xorb hash (Xorb Hash Computation)."""
        actual = packed_root(b"".join(self.chunk_hashes), array("Q", self.unpacked_ends))
        if actual != self.xorb_hash:
            raise HashMismatchError(
                "xorb footer", hash_to_string(self.xorb_hash), hash_to_string(actual)
            )

    def pack(self) -> bytes:
        """The footer and its 4-byte length trailer."""
        n = self.num_chunks
        body = b"".join(
            (
                _MAIN_IDENT,
                bytes((_MAIN_VERSION,)),
                self.xorb_hash,
                _HASH_IDENT,
                bytes((_HASH_VERSION,)),
                _U32.pack(n),
                *self.chunk_hashes,
                _BOUND_IDENT,
                bytes((_BOUND_VERSION,)),
                _U32.pack(n),
                struct.pack(f"<{n}I", *self.packed_ends),
                struct.pack(f"<{n}I", *self.unpacked_ends),
            )
        )
        size = len(body) + _TRAILER.size
        hashes_from_end = size - _MAIN_SIZE
        bounds_from_end = hashes_from_end - _SECTION_HEAD_SIZE - HASH_SIZE * n
        body += _TRAILER.pack(n, hashes_from_end, bounds_from_end, bytes(16))
        return body + _U32.pack(size)


def footer_record(footer: XorbFooter) -> bytes:
    """A footer that stands alone: its chunk region's length (u64) then the packed footer,
    so it parses without its xorb (footer_tail)."""
    return footer.packed_ends[-1].to_bytes(8, "little") + footer.pack()


def footer_tail(record: bytes | memoryview) -> tuple[memoryview, int]:
    """The footer bytes of a footer_record and the size of the xorb they end."""
    if len(record) < 8:
        raise XorbFormatError("footer record", "length", 0, len(record))
    region = int.from_bytes(record[:8], "little")
    return memoryview(record)[8:], region + len(record) - 8


@dataclass(frozen=True, slots=True)
class SerializedXorb:
    """A xorb ready to upload: its hash, its bytes, and its footer."""

    hash: bytes
    data: bytes
    footer: XorbFooter


def serialize_xorb(
    chunks: Sequence[tuple[bytes, bytes]], compression: Compression | None = None
) -> SerializedXorb:
    """Serialize (chunk hash, chunk data) pairs; compression None picks the best per chunk."""
    if not chunks:
        raise ValueError("a xorb holds at least one chunk")
    if len(chunks) > MAX_XORB_CHUNKS:
        raise ValueError(f"a xorb holds at most {MAX_XORB_CHUNKS} chunks, got {len(chunks)}")
    parts: list[bytes] = []
    packed_ends: list[int] = []
    unpacked_ends: list[int] = []
    packed = unpacked = 0
    for _h, data in chunks:
        if not 0 < len(data) <= MAX_CHUNK_SIZE:
            raise ValueError(f"chunk of {len(data)} bytes: chunks are 1 to {MAX_CHUNK_SIZE} bytes")
        if compression is None:
            scheme, payload = compress_best(data)
        else:
            scheme, payload = compression, compress(data, compression)
        parts.append(ChunkHeader(len(payload), scheme, len(data)).pack())
        parts.append(payload)
        packed += CHUNK_HEADER_SIZE + len(payload)
        unpacked += len(data)
        packed_ends.append(packed)
        unpacked_ends.append(unpacked)
    hashes = tuple(h for h, _ in chunks)
    xh = xorb_hash([(h, len(d)) for h, d in chunks])
    footer = XorbFooter(xh, hashes, tuple(packed_ends), tuple(unpacked_ends))
    data = b"".join((*parts, footer.pack()))  # one join: a single copy of the xorb at a time
    if len(data) > MAX_XORB_SIZE:
        raise ValueError(f"xorb of {len(data)} bytes exceeds {MAX_XORB_SIZE}")
    return SerializedXorb(xh, data, footer)


class XorbBuilder:
    """Collects chunks for one xorb, refusing any that would break the size limits."""

    # Room left for headers, footer and LZ4 expansion when checking the size limit.
    _OVERHEAD_PER_CHUNK = CHUNK_HEADER_SIZE + HASH_SIZE + 8 + 64
    _EMPTY = footer_size(0) + 4  # an empty xorb's footer and its length

    def __init__(self, max_bytes: int = MAX_XORB_SIZE, max_chunks: int = MAX_XORB_CHUNKS) -> None:
        self.max_bytes, self.max_chunks = max_bytes, max_chunks
        self.chunks: list[tuple[bytes, bytes]] = []
        self.chunk_bytes = 0  # bytes of chunk data collected so far

    def __len__(self) -> int:
        return len(self.chunks)

    def fits(self, data: bytes) -> bool:
        """Would adding this chunk keep the xorb within both limits (Size Constraints)?"""
        count = len(self.chunks) + 1
        grown = self._EMPTY + self.chunk_bytes + len(data) + count * self._OVERHEAD_PER_CHUNK
        return count <= self.max_chunks and grown <= self.max_bytes

    def add(self, h: bytes, data: bytes) -> int:
        """Add a chunk that fits; return its index in the xorb."""
        if not self.fits(data):
            raise ValueError("chunk does not fit in this xorb")
        self.chunks.append((h, data))
        self.chunk_bytes += len(data)
        return len(self.chunks) - 1

    def build(self, compression: Compression | None = None) -> SerializedXorb:
        """Serialize the collected chunks."""
        return serialize_xorb(self.chunks, compression)


def _fail(field: str, offset: int, value: object) -> XorbFormatError:
    return XorbFormatError("xorb", field, offset, value)


def _ident(buf: bytes, at: int, ident: bytes, version: int, name: str) -> None:
    if buf[at : at + 7] != ident:
        raise _fail(f"{name} ident", at, bytes(buf[at : at + 7]))
    if buf[at + 7] != version:
        raise _fail(f"{name} version", at + 7, buf[at + 7])


def parse_footer(tail: bytes | memoryview, xorb_size: int | None = None) -> XorbFooter:
    """Parse and validate the footer from the last bytes of a xorb (or the whole xorb).

    Checks every MUST of the CasObjectInfo Footer before allocating: idents, versions,
    lengths, counts, offsets monotonic and within the chunk region. It does not hash:
    call verify() for that. xorb_size is the whole xorb's length when tail is a suffix.
    """
    buf = bytes(tail)
    total = len(buf) if xorb_size is None else xorb_size
    base = total - len(buf)  # offset of buf[0] in the xorb, for messages
    if len(buf) < 4:
        raise _fail("info length", base, f"{len(buf)} bytes, need 4")
    info_len = _U32.unpack_from(buf, len(buf) - 4)[0]
    if info_len < footer_size(0) or info_len > len(buf) - 4:
        raise _fail("info length", total - 4, info_len)
    start = len(buf) - 4 - info_len
    _ident(buf, start, _MAIN_IDENT, _MAIN_VERSION, "main header")
    xh = buf[start + 8 : start + _MAIN_SIZE]
    at = start + _MAIN_SIZE
    _ident(buf, at, _HASH_IDENT, _HASH_VERSION, "hash section")
    n = _U32.unpack_from(buf, at + 8)[0]
    if n == 0 or n > MAX_XORB_CHUNKS or footer_size(n) != info_len:
        raise _fail("hash section num_chunks", base + at + 8, n)
    at += _SECTION_HEAD_SIZE
    hashes = tuple([buf[i : i + HASH_SIZE] for i in range(at, at + HASH_SIZE * n, HASH_SIZE)])
    at += HASH_SIZE * n
    _ident(buf, at, _BOUND_IDENT, _BOUND_VERSION, "boundary section")
    if _U32.unpack_from(buf, at + 8)[0] != n:
        raise _fail("boundary section num_chunks", base + at + 8, _U32.unpack_from(buf, at + 8)[0])
    at += _SECTION_HEAD_SIZE
    packed_ends = struct.unpack_from(f"<{n}I", buf, at)
    unpacked_ends = struct.unpack_from(f"<{n}I", buf, at + 4 * n)
    at += 8 * n
    tn, hashes_from_end, bounds_from_end, reserved = _TRAILER.unpack_from(buf, at)
    if tn != n:
        raise _fail("trailer num_chunks", base + at, tn)
    if hashes_from_end != info_len - _MAIN_SIZE:
        raise _fail("hashes section offset", base + at + 4, hashes_from_end)
    if bounds_from_end != hashes_from_end - _SECTION_HEAD_SIZE - HASH_SIZE * n:
        raise _fail("boundary section offset", base + at + 8, bounds_from_end)
    if any(reserved):
        raise _fail("trailer reserved", base + at + 12, reserved.hex())
    region = total - 4 - info_len
    _check_ends(packed_ends, base + start, "chunk boundary offset", CHUNK_HEADER_SIZE + 1, region)
    if packed_ends[-1] != region:
        raise _fail("last chunk boundary offset", base + start, (packed_ends[-1], region))
    _check_ends(unpacked_ends, base + start, "unpacked chunk offset", 1, None)
    return XorbFooter(xh, hashes, packed_ends, unpacked_ends)


def _steps(ends: Sequence[int]) -> list[int]:
    """How far each end lies past the one before it (the first: past 0)."""
    return list(map(operator.sub, ends, (0, *ends[:-1])))


def _check_ends(ends: Sequence[int], at: int, field: str, min_step: int, limit: int | None) -> None:
    """Ends must grow by min_step to a chunk's limit each, and stay within limit."""
    max_step = MAX_CHUNK_SIZE + (CHUNK_HEADER_SIZE if min_step > 1 else 0)
    steps = _steps(ends)
    if min(steps) >= min_step and max(steps) <= max_step and (limit is None or ends[-1] <= limit):
        return  # ends grow, so the last is the largest
    for i, (end, step) in enumerate(zip(ends, steps, strict=True)):
        if not min_step <= step <= max_step or (limit is not None and end > limit):
            raise _fail(f"{field} {i}", at, end)


def parse_chunk_header(buf: bytes | memoryview, at: int, remaining: int) -> ChunkHeader:
    """Validate one chunk header (Chunk Header Format, Size Fields) before any allocation."""
    if remaining < CHUNK_HEADER_SIZE:
        raise _fail("chunk header", at, f"{remaining} bytes left, need {CHUNK_HEADER_SIZE}")
    h = bytes(buf[at : at + CHUNK_HEADER_SIZE])
    if h[0] != 0:
        raise _fail("chunk version", at, h[0])
    csize = int.from_bytes(h[1:4], "little")
    usize = int.from_bytes(h[5:8], "little")
    if h[4] not in (0, 1, 2):
        raise _fail("compression type", at + 4, h[4])
    if not 0 < usize <= MAX_CHUNK_SIZE:
        raise _fail("uncompressed size", at + 5, usize)
    if not 0 < csize <= min(MAX_CHUNK_SIZE, remaining - CHUNK_HEADER_SIZE):
        raise _fail("compressed size", at + 1, csize)
    if h[4] == Compression.NONE and csize != usize:
        raise _fail("compressed size of an uncompressed chunk", at + 1, (csize, usize))
    return ChunkHeader(csize, h[4], usize)


def iter_chunks(data: bytes | memoryview, base: int = 0) -> Iterator[tuple[ChunkHeader, ChunkData]]:
    """Decode consecutive chunks from bytes that start at a chunk header (the url_range case).

    base is the offset of data[0] in the xorb, for error messages.
    """
    view = memoryview(data)
    at = 0
    while at < len(view):
        header = parse_chunk_header(view, at, len(view) - at)
        payload = view[at + CHUNK_HEADER_SIZE : at + CHUNK_HEADER_SIZE + header.compressed_size]
        try:
            chunk = decompress(payload, header.compression, header.uncompressed_size)
        except CompressionError as exc:
            raise _fail("chunk payload", base + at, str(exc)) from None
        yield header, chunk
        at += CHUNK_HEADER_SIZE + header.compressed_size


def decode_range(
    data: bytes | memoryview, footer: XorbFooter, start: int, end: int, base: int
) -> list[ChunkData]:
    """Decode chunks [start, end) from data = xorb bytes [base, ...), checking every hash."""
    lo, hi = footer.packed_range(start, end)
    if base > lo or base + len(data) < hi:
        raise _fail("chunk range", base, f"bytes {lo}..{hi} not within fetched {len(data)}")
    view = memoryview(data)[lo - base : hi - base]
    chunks: list[ChunkData] = []
    for i, (_header, chunk) in enumerate(iter_chunks(view, lo), start):
        if i >= end:
            raise _fail("chunk count", lo, f"more than {end - start} chunks in range")
        verify_chunk(chunk, footer.chunk_hashes[i], i)
        if len(chunk) != footer.unpacked_size(i):
            raise _fail(f"unpacked size of chunk {i}", lo, len(chunk))
        chunks.append(chunk)
    if len(chunks) != end - start:
        raise _fail("chunk count", lo, f"{len(chunks)} chunks, expected {end - start}")
    return chunks


def verify_chunk(data: ChunkData, expected: bytes, index: int) -> None:
    """Raise HashMismatchError unless data hashes to expected."""
    actual = chunk_hash(data)
    if actual != expected:
        raise HashMismatchError(f"chunk {index}", hash_to_string(expected), hash_to_string(actual))


@dataclass(frozen=True, slots=True)
class ParsedXorb:
    """A whole xorb, validated: its footer and every chunk, decompressed and hash-checked."""

    footer: XorbFooter
    chunks: tuple[bytes, ...]
    headers: tuple[ChunkHeader, ...]
    region: bytes  # the serialized chunk region (what hf_xet uploads)

    def serialize(self) -> bytes:
        """The stored form: chunk region, footer, length trailer."""
        return self.region + self.footer.pack()


def has_footer(data: bytes | memoryview) -> bool:
    """Does data end in something that claims to be a CasObjectInfo footer?"""
    if len(data) < footer_size(1) + 4:
        return False
    info_len = _U32.unpack_from(data, len(data) - 4)[0]
    at = len(data) - 4 - info_len
    return at >= 0 and bytes(data[at : at + 7]) == _MAIN_IDENT


def parse_xorb(data: bytes | memoryview, expected_hash: bytes | None = None) -> ParsedXorb:
    """Parse and fully validate a xorb: format, chunk hashes and xorb hash.

    Accepts the stored form (chunk region + footer) and the upload form that hf_xet sends
    (chunk region only); for the latter the footer is computed from the chunks.
    """
    footer, headers, chunks = _validate(data, expected_hash, keep=True)
    region = bytes(memoryview(data)[: footer.packed_ends[-1]])
    return ParsedXorb(footer, tuple(chunks), tuple(headers), region)


def stored_xorb(data: bytes, expected_hash: bytes) -> bytes:
    """A xorb (either form) validated as parse_xorb does, in its stored form (data itself if
    it is in it already). Holds one decompressed chunk at a time, not the whole xorb's."""
    footer, _, _ = _validate(data, expected_hash, keep=False)
    end, tail = footer.packed_ends[-1], footer.pack()
    if len(data) == end + len(tail) and data.endswith(tail):
        return data
    return data[:end] + tail


def _validate(
    data: bytes | memoryview, expected_hash: bytes | None, keep: bool
) -> tuple[XorbFooter, list[ChunkHeader], list[bytes]]:
    """The footer, chunk headers and (if keep) decompressed chunks of a valid xorb."""
    if len(data) > MAX_XORB_ACCEPTED:
        raise _fail("xorb size", 0, len(data))
    if has_footer(data):
        footer = parse_footer(data)
        footer.verify()
        region = memoryview(data)[: footer.packed_ends[-1]]
        headers, chunks, _ = _decode_region(region, footer, keep)
    else:
        headers, chunks, hashes = _decode_region(memoryview(data), None, keep)
        packed_ends, unpacked_ends = _ends(headers)
        sizes = [(h, hd.uncompressed_size) for h, hd in zip(hashes, headers, strict=True)]
        footer = XorbFooter(xorb_hash(sizes), tuple(hashes), packed_ends, unpacked_ends)
    if expected_hash is not None and footer.xorb_hash != expected_hash:
        raise HashMismatchError(
            "xorb", hash_to_string(expected_hash), hash_to_string(footer.xorb_hash)
        )
    return footer, headers, chunks


def _ends(headers: Sequence[ChunkHeader]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    packed: list[int] = []
    unpacked: list[int] = []
    p = u = 0
    for h in headers:
        p += CHUNK_HEADER_SIZE + h.compressed_size
        u += h.uncompressed_size
        packed.append(p)
        unpacked.append(u)
    return tuple(packed), tuple(unpacked)


def _decode_region(
    region: memoryview, footer: XorbFooter | None, keep: bool
) -> tuple[list[ChunkHeader], list[bytes], list[bytes]]:
    """Decode every chunk of a chunk region, one at a time: the headers, the chunks (only
    if keep) and their hashes. With a footer, check its sizes, offsets and hashes."""
    if not region:
        raise _fail("chunk region", 0, "empty: a xorb holds at least one chunk")
    headers: list[ChunkHeader] = []
    chunks: list[bytes] = []
    hashes: list[bytes] = []
    packed = unpacked = 0
    for i, (header, chunk) in enumerate(iter_chunks(region)):
        if i >= MAX_XORB_CHUNKS:
            raise _fail("num_chunks", 0, f"more than {MAX_XORB_CHUNKS}")
        headers.append(header)
        if keep:
            chunks.append(bytes(chunk))  # kept past the region's life: its own bytes
        if footer is None:
            hashes.append(chunk_hash(chunk))
            continue
        if i >= footer.num_chunks:
            raise _fail("num_chunks", 0, f"more in data, footer says {footer.num_chunks}")
        packed += CHUNK_HEADER_SIZE + header.compressed_size
        unpacked += header.uncompressed_size
        if packed != footer.packed_ends[i]:
            raise _fail(f"chunk boundary offset {i}", 0, footer.packed_ends[i])
        if unpacked != footer.unpacked_ends[i]:
            raise _fail(f"unpacked chunk offset {i}", 0, footer.unpacked_ends[i])
        verify_chunk(chunk, footer.chunk_hashes[i], i)
    if footer is not None and len(headers) != footer.num_chunks:
        raise _fail("num_chunks", 0, f"{len(headers)} in data, footer says {footer.num_chunks}")
    return headers, chunks, hashes
