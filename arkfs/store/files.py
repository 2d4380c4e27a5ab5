"""File bytes rebuilt from a Store, every chunk checked against its hash on the way out.

Blocking (xorb reads, decompression, hashing): call from a worker thread, one `next()` at
a time; each step reads one packed xorb range of at most about BATCH_BYTES.
"""

import hashlib
from collections.abc import Generator

from arkfs.store.base import FileRecord, Store, file_problem
from arkfs.store.errors import StoreCorrupt
from arkfs.xet.errors import XetError
from arkfs.xet.hashing import hash_to_string
from arkfs.xet.xorb import XorbFooter, decode_range

BATCH_BYTES = 8 * 1024 * 1024  # unpacked bytes decoded per step, to bound memory


def check_file(store: Store, record: FileRecord) -> None:
    """Raise StoreCorrupt unless the record's terms agree with the xorb footers and its hash.

    This closes the trust chain above the chunks: footer -> xorb hash, and the terms'
    chunk hashes -> file hash. read_file checks each chunk against its footer hash.
    """
    problem = file_problem(record, store.xorb_footer)
    if problem:
        raise StoreCorrupt(
            f"file {hash_to_string(record.file_hash)}: {problem}; run `arkfs store check`"
        )


def read_file(
    store: Store, record: FileRecord, start: int = 0, end: int | None = None
) -> Generator[bytes, None, None]:
    """Yield bytes [start, end) of a stored file (end None: to its end), chunk-verified.

    Raises StoreCorrupt when a chunk does not decode or does not match its hash.
    """
    end = record.size if end is None else min(end, record.size)
    pos = 0  # file offset of the current term
    for term in record.terms:
        if pos >= end:
            break
        term_end = pos + term.unpacked_length
        if term_end <= start:
            pos = term_end
            continue
        footer = store.xorb_footer(term.xorb_hash)
        first = term.start
        while first < term.end and pos + footer.unpacked_size(first) <= start:
            pos += footer.unpacked_size(first)  # whole chunks before start: not read at all
            first += 1
        while first < term.end and pos < end:
            # Chunks [first, last): up to BATCH_BYTES, at least one, none past `end`.
            last, size = first, 0
            while last < term.end and (last == first or size < BATCH_BYTES) and pos + size < end:
                size += footer.unpacked_size(last)
                last += 1
            yield _slice(store, footer, term.xorb_hash, first, last, pos, start, end)
            pos += size
            first = last
        pos = term_end


class WholeXorbs:
    """A view of a store whose xorb reads fetch each xorb whole, once, and keep the last
    KEPT of them: checking the SHA-256 of a shard's files then costs one read per xorb, not
    one per term (2,000 small files in one xorb, or one block repeated, were 2,000 reads,
    each an S3 GET on the scaled store). Everything else is the store's."""

    KEPT = 2  # xorbs kept (64 MiB each at most): memory stays bounded per shard intake

    def __init__(self, store: Store) -> None:
        self._store = store
        self._kept: dict[bytes, bytes] = {}  # oldest first

    def read_xorb(self, h: bytes, start: int, end: int) -> bytes:
        data = self._kept.pop(h, None)
        if data is None:
            data = self._store.read_xorb(h, 0, self._store.xorb_size(h))
            while len(self._kept) >= self.KEPT:
                del self._kept[next(iter(self._kept))]
        self._kept[h] = data
        return data[start:end]

    def __getattr__(self, name: str) -> object:
        return getattr(self._store, name)


def file_sha256(store: Store, record: FileRecord) -> bytes:
    """The SHA-256 of a stored file's bytes, read chunk-verified (one pass, bounded memory)."""
    digest = hashlib.sha256()
    for data in read_file(store, record):
        digest.update(data)
    return digest.digest()


def _slice(
    store: Store,
    footer: XorbFooter,
    xorb: bytes,
    first: int,
    last: int,
    pos: int,
    start: int,
    end: int,
) -> bytes:
    """Decode chunks [first, last) of xorb, which begin at file offset pos; clip to [start, end)."""
    lo, hi = footer.packed_range(first, last)
    data = store.read_xorb(xorb, lo, hi)
    try:
        chunks = decode_range(data, footer, first, last, lo)
    except XetError as exc:
        raise StoreCorrupt(
            f"xorb {hash_to_string(xorb)} is damaged: {exc}; run `arkfs store check`"
        ) from None
    joined = b"".join(chunks)
    return joined[max(start - pos, 0) : end - pos]
