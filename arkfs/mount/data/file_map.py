"""File maps: where every chunk of a file lives, checked against the file hash (trust chain).

A map is built once per file from its terms (File Reconstruction) and the footers of its
xorbs (CasObjectInfo Footer, each already checked against its xorb hash), and is accepted
only if the chunk hashes and sizes give the file hash (File Hashes) and the file's size.
From then on it is the truth about the file: reconstructions and URLs are mere hints.
Chunks are kept in flat arrays, about 56 bytes each, so a 1 GiB file (~16k chunks) maps
in under 1 MB, and finding the chunks of a byte range is a bisection.

A verified map is also kept on disk (pack_map, unpack_map), so a file whose chunks are
cached reads with no backend at all, after a remount too. Loading one checks it again.
"""

from __future__ import annotations

import sys
from array import array
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import blake3
import msgpack

from arkfs.mount.data.errors import BadMapFile
from arkfs.xet.compression import ChunkData
from arkfs.xet.constants import HASH_SIZE
from arkfs.xet.errors import XorbFormatError
from arkfs.xet.hashing import hash_to_string, packed_file_hash
from arkfs.xet.reconstruction import Term
from arkfs.xet.trust import verify_terms
from arkfs.xet.xorb import XorbFooter, decode_range, iter_chunks, verify_chunk

MAP_FORMAT, MAP_VERSION = "arkfs-file-map", 1
MAP_BYTES = 56  # bytes a map takes per chunk, in memory and on disk
_ARRAYS = {"ends": "Q", "xorb_of": "I", "index": "I", "packed_start": "I", "packed_end": "I"}


@dataclass(eq=False, slots=True)
class FileMap:
    """The verified chunk layout of one file; index i is the file's i-th chunk."""

    file_hash: bytes
    size: int
    ends: array[int]  # file offset where chunk i ends ('Q')
    hashes: bytes  # chunk hashes, HASH_SIZE bytes each
    xorbs: list[bytes]  # the distinct xorbs of the file
    xorb_of: array[int]  # index into xorbs of chunk i ('I')
    index: array[int]  # index of chunk i in its xorb ('I')
    packed_start: array[int]  # where chunk i starts in its serialized xorb ('I')
    packed_end: array[int]  # where it ends ('I')

    def __len__(self) -> int:
        return len(self.ends)

    def chunk_hash(self, i: int) -> bytes:
        return self.hashes[i * HASH_SIZE : (i + 1) * HASH_SIZE]

    def start(self, i: int) -> int:
        """File offset where chunk i starts."""
        return self.ends[i - 1] if i else 0

    def span(self, start: int, end: int) -> tuple[int, int]:
        """Chunks [first, last) that hold bytes [start, end), 0 <= start < end <= size."""
        return bisect_right(self.ends, start), bisect_right(self.ends, end - 1) + 1

    def follows(self, i: int, j: int) -> bool:
        """Is chunk j the chunk right after chunk i in the same xorb (one fetch can get both)?"""
        return self.xorb_of[i] == self.xorb_of[j] and self.index[j] == self.index[i] + 1


def build_map(
    file_hash: bytes, size: int, terms: Sequence[Term], footers: Mapping[bytes, XorbFooter]
) -> FileMap:
    """The map of a file from its terms and the verified footers of their xorbs.

    Blocking (hashes every chunk hash into the file hash): call it in a worker thread.
    Raises what verify_terms raises (the trust chain).
    """
    verify_terms(file_hash, size, terms, footers)
    return layout_map(file_hash, size, terms, footers)


def layout_map(
    file_hash: bytes, size: int, terms: Sequence[Term], footers: Mapping[bytes, XorbFooter]
) -> FileMap:
    """The map build_map returns, unchecked: a plan to fetch by while it is being checked,
    never the truth about a file until build_map's checks pass. Raises KeyError, IndexError
    on terms the footers do not cover."""
    ends, xorb_of, index = array("Q"), array("I"), array("I")
    packed_start, packed_end = array("I"), array("I")
    hashes: list[bytes] = []
    xorb_ids: dict[bytes, int] = {}
    for t in terms:
        f = footers[t.xorb_hash]
        if not 0 <= t.start < t.end <= f.num_chunks:
            raise IndexError(f"chunks {t.start}..{t.end} of a xorb of {f.num_chunks}")
        xid = xorb_ids.setdefault(t.xorb_hash, len(xorb_ids))
        ue, pe = f.unpacked_ends, f.packed_ends
        base = (ends[-1] if ends else 0) - (ue[t.start - 1] if t.start else 0)
        ends.extend(map(base.__add__, ue[t.start : t.end]))
        hashes.extend(f.chunk_hashes[t.start : t.end])
        packed_start.extend(pe[t.start - 1 : t.end - 1] if t.start else (0, *pe[: t.end - 1]))
        packed_end.extend(pe[t.start : t.end])
        xorb_of.extend([xid] * (t.end - t.start))
        index.extend(range(t.start, t.end))
    return FileMap(
        file_hash,
        size,
        ends,
        b"".join(hashes),
        list(xorb_ids),
        xorb_of,
        index,
        packed_start,
        packed_end,
    )


def decode_run(data: bytes | memoryview, fmap: FileMap, run: Sequence[int]) -> list[ChunkData]:
    """The chunks at map indices run (consecutive in one xorb) from their fetched bytes.

    Chunk Header Format and Compression Schemes: decompress each; Chunk Hashes: check
    each against the map. Blocking: call it in a worker thread. Raises XetError.
    """
    base = fmap.packed_start[run[0]]
    out: list[ChunkData] = []
    for k, (_header, chunk) in enumerate(iter_chunks(data, base)):
        if k >= len(run):
            raise XorbFormatError("xorb", "chunk count", base, f"more than {len(run)} chunks")
        i = run[k]
        if len(chunk) != fmap.ends[i] - fmap.start(i):
            raise XorbFormatError(
                "xorb", f"unpacked size of chunk {fmap.index[i]}", base, len(chunk)
            )
        verify_chunk(chunk, fmap.chunk_hash(i), fmap.index[i])
        out.append(chunk)
    if len(out) != len(run):
        raise XorbFormatError("xorb", "chunk count", base, f"{len(out)} chunks, not {len(run)}")
    return out


def decode_ahead(
    data: bytes, fmap: FileMap, run: Sequence[int], footer: XorbFooter, start: int, end: int
) -> tuple[list[ChunkData], list[ChunkData]]:
    """The chunks at map indices run, then chunks [start, end) of their xorb right after
    them (read ahead for other files), from the bytes fetched for both: the first checked
    against the map (decode_run), the others against the xorb's verified footer. Blocking.
    Raises XetError."""
    cut = fmap.packed_end[run[-1]] - fmap.packed_start[run[0]]
    base = fmap.packed_start[run[0]]
    return decode_run(memoryview(data)[:cut], fmap, run), decode_range(
        data, footer, start, end, base
    )


def _le_bytes(a: array[int]) -> bytes:
    """An array's items as little-endian bytes, whatever this machine's byte order."""
    if sys.byteorder == "big":
        a = array(a.typecode, a)
        a.byteswap()
    return a.tobytes()


def _from_le(typecode: str, data: object, n: int, name: str) -> array[int]:
    a = array(typecode)
    if not isinstance(data, bytes) or len(data) != n * a.itemsize:
        raise BadMapFile(f"{name} does not hold {n} items")
    a.frombytes(data)
    if sys.byteorder == "big":
        a.byteswap()
    return a


def pack_map(fmap: FileMap) -> bytes:
    """A map as stored on disk: the BLAKE3 digest of its body, then the body (msgpack)."""
    body: dict[str, Any] = {
        "format": MAP_FORMAT,
        "version": MAP_VERSION,
        "file_hash": fmap.file_hash,
        "size": fmap.size,
        "hashes": fmap.hashes,
        "xorbs": fmap.xorbs,
    }
    body |= {name: _le_bytes(getattr(fmap, name)) for name in _ARRAYS}
    packed: bytes = msgpack.packb(body, use_bin_type=True)
    return blake3.blake3(packed).digest() + packed


def unpack_map(data: bytes, file_hash: bytes) -> FileMap:
    """The map of file_hash stored as pack_map wrote it, checked again (blocking).

    The file hash, recomputed from the chunk hashes and sizes, vouches for those and for
    the size; the digest also covers what it does not (xorb hashes, chunk indices, packed
    offsets), whose damage would otherwise surface only as fetches that fail their checks.
    Raises BadMapFile.
    """
    digest, packed = data[:HASH_SIZE], data[HASH_SIZE:]
    if blake3.blake3(packed).digest() != digest:
        raise BadMapFile("its digest does not match its contents")
    try:
        body = msgpack.unpackb(packed, raw=False)
    except (ValueError, msgpack.UnpackException) as exc:
        raise BadMapFile(f"it is not msgpack ({exc})") from None
    if not isinstance(body, dict) or (body.get("format"), body.get("version")) != (
        MAP_FORMAT,
        MAP_VERSION,
    ):
        raise BadMapFile(f"it is not a version {MAP_VERSION} {MAP_FORMAT}")
    if body.get("file_hash") != file_hash:
        raise BadMapFile("it holds the map of another file")
    hashes, xorbs, size = body.get("hashes"), body.get("xorbs"), body.get("size")
    if not isinstance(hashes, bytes) or not hashes or len(hashes) % HASH_SIZE:
        raise BadMapFile("its chunk hashes are malformed")
    n = len(hashes) // HASH_SIZE
    arrays = {name: _from_le(t, body.get(name), n, name) for name, t in _ARRAYS.items()}
    if not (
        isinstance(xorbs, list)
        and xorbs
        and all(isinstance(x, bytes) and len(x) == HASH_SIZE for x in xorbs)
        and max(arrays["xorb_of"]) < len(xorbs)
    ):
        raise BadMapFile("its xorb hashes are malformed")
    ends = arrays["ends"]
    prev = 0
    for i, e in enumerate(ends):
        if e <= prev or arrays["packed_start"][i] >= arrays["packed_end"][i]:
            raise BadMapFile(f"chunk {i} has an empty or negative extent")
        prev = e
    if size != prev:
        raise BadMapFile(f"it says {size!r} bytes, its chunks hold {prev}")
    actual = packed_file_hash(hashes, ends)
    if actual != file_hash:
        raise BadMapFile(f"its chunks give file hash {hash_to_string(actual)}")
    return FileMap(file_hash, size, hashes=hashes, xorbs=xorbs, **arrays)
