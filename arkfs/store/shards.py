"""A shard against the stored xorbs: the one rule of shard intake and `arkfs store check`."""

import hashlib
from collections.abc import Callable, Mapping
from typing import cast

from arkfs.store.base import FileRecord, FooterOf, Store, file_problem, footer_problem
from arkfs.store.files import XorbWindows, file_sha256
from arkfs.xet.errors import XetError
from arkfs.xet.hashing import ZERO_HASH
from arkfs.xet.shard import FileBlock, Shard, parse_shard, verify_cas_block, verify_file_block

EMPTY_SHA256 = hashlib.sha256(b"").digest()
LOCAL_WINDOW = 16 << 20  # bytes of a local xorb read at once by the SHA-256 check


def file_record(block: FileBlock) -> FileRecord:
    """The record a file block registers; its SHA-256 is the one shard_problem checks."""
    sha256 = block.sha256
    if block.size == 0 and sha256 == ZERO_HASH:  # hf_xet's SHA-256 of the empty file
        sha256 = EMPTY_SHA256
    return FileRecord(block.file_hash, block.size, sha256, block.terms)


Stored = Mapping[bytes, tuple[int, bytes | None]]  # size and SHA-256 of stored files
Progress = Callable[[int, int], None]  # told (files checked so far, files in the shard)


def shard_problem(
    store: Store,
    shard: Shard,
    footer_of: FooterOf,
    stored: Stored | None = None,
    progress: Progress | None = None,
) -> str | None:
    """What makes a shard disagree with the stored xorbs (footer_of gives their footers), or None.

    Every field the xorb footers determine is checked (Shard Format: CAS Info Section, File
    Info Section); a FileMetadataExt's SHA-256 is checked against the file's bytes, unless
    stored (intake's store.file_sizes) holds the file with that size and SHA-256 already:
    its intake checked them, so a retried or repeated shard reads no bytes again.
    """
    for i, cas in enumerate(shard.cas_blocks):
        footer, problem = footer_problem(footer_of, cas.xorb_hash)
        if footer is None:
            return f"cas block {i}: {problem}"
        try:
            verify_cas_block(cas, footer, store.xorb_size(cas.xorb_hash))
        except XetError as exc:
            return f"cas block {i}: {exc}"
    # SHA-256 checks read xorbs in windows (XorbWindows): whole where every read is a
    # request (S3); a local store's reads are preads, and whole xorbs would only cost memory.
    window = None if getattr(store, "remote_reads", False) else LOCAL_WINDOW
    windows = cast(Store, XorbWindows(store, window))
    for i, block in enumerate(shard.files):
        record = file_record(block)
        problem = file_problem(record, footer_of)
        if problem:
            return f"file {i}: {problem}"
        if block.verification is not None:  # FileVerificationEntry
            try:
                verify_file_block(block, lambda h, s, e: footer_of(h).chunk_hashes[s:e])
            except XetError as exc:
                return f"file {i}: {exc}"
        if progress is not None:
            progress(i, len(shard.files))
        known = (stored or {}).get(record.file_hash)
        if record.sha256 is not None and known != (record.size, record.sha256):  # MetadataExt
            actual = file_sha256(windows, record)
            if actual != record.sha256:
                return (
                    f"file {i}: metadata ext SHA-256 is {record.sha256.hex()}, "
                    f"its bytes hash to {actual.hex()}"
                )
    if progress is not None:
        progress(len(shard.files), len(shard.files))
    return None


def stored_shard_problem(store: Store, name: str, data: bytes, footer_of: FooterOf) -> str | None:
    """`check`'s line for a stored shard (its bytes as stored) that fails shard_problem."""
    try:
        problem = shard_problem(store, parse_shard(data), footer_of)
    except XetError as exc:
        problem = str(exc)
    if problem is None:
        return None
    return (
        f"shard {name} disagrees with its xorbs: {problem}; the files it "
        "registers may be wrong: restore the store from a backup"
    )
