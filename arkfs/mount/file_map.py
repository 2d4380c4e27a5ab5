"""File maps: where every chunk of a file lives, checked against the file hash (trust chain).

A map is built once per file from its terms (File Reconstruction) and the footers of its
xorbs (CasObjectInfo Footer, each already checked against its xorb hash), and is accepted
only if the chunk hashes and sizes give the file hash (File Hashes) and the file's size.
From then on it is the truth about the file: reconstructions and URLs are mere hints.
Chunks are kept in flat arrays, about 56 bytes each, so a 1 GiB file (~16k chunks) maps
in under 1 MB, and finding the chunks of a byte range is a bisection.
"""

from array import array
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from arkfs.xet.constants import HASH_SIZE
from arkfs.xet.errors import HashMismatchError, ReconstructionError, XorbFormatError
from arkfs.xet.hashing import file_hash as compute_file_hash
from arkfs.xet.hashing import hash_to_string
from arkfs.xet.reconstruction import Term
from arkfs.xet.xorb import XorbFooter, iter_chunks, verify_chunk


@dataclass(eq=False, slots=True)
class FileMap:
    """The verified chunk layout of one file; index i is the file's i-th chunk."""

    file_hash: bytes
    size: int
    ends: array  # file offset where chunk i ends ('Q')
    hashes: bytes  # chunk hashes, HASH_SIZE bytes each
    xorbs: list[bytes]  # the distinct xorbs of the file
    xorb_of: array  # index into xorbs of chunk i ('I')
    index: array  # index of chunk i in its xorb ('I')
    packed_start: array  # where chunk i starts in its serialized xorb ('I')
    packed_end: array  # where it ends ('I')

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
    Raises ReconstructionError if the terms disagree with the footers or the size, and
    HashMismatchError if they do not give the file hash.
    """
    ends, xorb_of, index = array("Q"), array("I"), array("I")
    packed_start, packed_end = array("I"), array("I")
    hashes: list[bytes] = []
    pairs: list[tuple[bytes, int]] = []
    xorb_ids: dict[bytes, int] = {}
    pos = 0
    for n, t in enumerate(terms):
        f = footers[t.xorb_hash]
        if not t.start < t.end <= f.num_chunks:
            raise ReconstructionError(
                f"term {n} names chunks {t.start}..{t.end} of xorb "
                f"{hash_to_string(t.xorb_hash)}, which has {f.num_chunks}"
            )
        xid = xorb_ids.setdefault(t.xorb_hash, len(xorb_ids))
        ue, pe = f.unpacked_ends, f.packed_ends
        term_start = pos
        for i in range(t.start, t.end):
            size_i = ue[i] - (ue[i - 1] if i else 0)
            pos += size_i
            ends.append(pos)
            hashes.append(f.chunk_hashes[i])
            pairs.append((f.chunk_hashes[i], size_i))
            packed_start.append(pe[i - 1] if i else 0)
            packed_end.append(pe[i])
        if pos - term_start != t.unpacked_length:
            raise ReconstructionError(
                f"term {n} says {t.unpacked_length} bytes, its chunks hold {pos - term_start}"
            )
        xorb_of.extend([xid] * (t.end - t.start))
        index.extend(range(t.start, t.end))
    if pos != size:
        raise ReconstructionError(f"the terms hold {pos} bytes, the file has {size}")
    actual = compute_file_hash(pairs)
    if actual != file_hash:
        raise HashMismatchError("file", hash_to_string(file_hash), hash_to_string(actual))
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


def decode_run(data: bytes, fmap: FileMap, run: Sequence[int]) -> list[bytes]:
    """The chunks at map indices run (consecutive in one xorb) from their fetched bytes.

    Chunk Header Format and Compression Schemes: decompress each; Chunk Hashes: check
    each against the map. Blocking: call it in a worker thread. Raises XetError.
    """
    base = fmap.packed_start[run[0]]
    out: list[bytes] = []
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
