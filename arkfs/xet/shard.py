"""Shards (spec: "Shard Format"): upload and stored forms, lookup tables and keyed dedup.

Pure code: bytes in, bytes out. parse_shard() checks every MUST of the format before it
allocates anything sized by the input and raises only ShardFormatError. Reserved fields
must be zero, as hf_xet writes them: a bit set there is damage or a format this parser does
not know. verify_cas_block() checks what a CAS block says against its xorb's footer.
"""

import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import starmap
from typing import TypeVar

from arkfs.xet.constants import HASH_SIZE
from arkfs.xet.errors import HashMismatchError, ShardFormatError, ShardMismatchError
from arkfs.xet.hashing import ZERO_HASH, hash_to_string, keyed_hash, verification_hash
from arkfs.xet.reconstruction import Term
from arkfs.xet.xorb import XorbFooter

# Header, Magic Tag
HF_APP_ID = b"HFRepoMetaData"
APP_ID_SIZE = 14
MAGIC_SEQUENCE = bytes.fromhex("55696745 6a7b8157 83a5bdd9 5ccdd14a a9")
HEADER_VERSION = 2
FOOTER_VERSION = 1

HEADER_SIZE = 48
RECORD_SIZE = 48  # every header, entry and bookend of the file and CAS info sections
FOOTER_SIZE = 200
NO_EXPIRY = 2**64 - 1  # the key expiry of shards that do not expire (hf_xet's default)

# FileDataSequenceHeader: File Flags
WITH_VERIFICATION = 1 << 31
WITH_METADATA_EXT = 1 << 30
# CASChunkSequenceEntry: Chunk Flags
GLOBAL_DEDUP_ELIGIBLE = 1 << 31

_FILE_FLAGS = WITH_VERIFICATION | WITH_METADATA_EXT
_BOOKEND = b"\xff" * HASH_SIZE + bytes(RECORD_SIZE - HASH_SIZE)  # Bookend Entry

_HEADER = struct.Struct("<32sQQ")
_FILE_HEADER = struct.Struct("<32sII8x")  # FileDataSequenceHeader
_HASH_U32X4 = struct.Struct("<32s4I")  # FileDataSequenceEntry and CASChunkSequenceHeader
_HASH_RECORD = struct.Struct("<32s16x")  # FileVerificationEntry and FileMetadataExt
_CHUNK = struct.Struct("<32sIII4x")  # CASChunkSequenceEntry
_FOOTER = struct.Struct("<9Q32sQQ48x4Q")  # Footer
_LOOKUP = struct.Struct("<QI")  # File and CAS Lookup Tables
# Chunk Lookup Table: the CAS entry index and the chunk index (u32 each) read as one u64.
_CHUNK_LOOKUP = struct.Struct("<QQ")
_TRUNCATED = struct.Struct("<Q40x")  # a record's truncated hash
_LE_U64X4 = struct.Struct("<4Q")  # with _BE_U64X4, for the stored form of a SHA-256
_BE_U64X4 = struct.Struct(">4Q")

# Byte offsets of the fields within their records, for error messages.
_AT_FLAGS = 32
_AT_COUNT = 36
_AT_CHUNK_RANGE = 40
_AT_CHUNK_FLAGS = 40
_AT_FILE_RESERVED = 40
_AT_CHUNK_RESERVED = 44
_AT_FOOTER_RESERVED = 120
_FOOTER_FIELDS = (
    "footer version",
    "file info offset",
    "cas info offset",
    "file lookup offset",
    "file lookup num entries",
    "cas lookup offset",
    "cas lookup num entries",
    "chunk lookup offset",
    "chunk lookup num entries",
)
_AT_FOOTER = dict(zip(_FOOTER_FIELDS, range(0, 72, 8), strict=True)) | {"footer offset": 192}

_Block = TypeVar("_Block", "FileBlock", "CasBlock")


@dataclass(frozen=True, slots=True)
class FileBlock:
    """A file reconstruction: its terms, and per term a verification hash if present."""

    file_hash: bytes
    terms: tuple[Term, ...]  # FileDataSequenceEntry; its CAS flags MUST be 0, not kept
    verification: tuple[bytes, ...] | None = None  # FileVerificationEntry range hashes
    sha256: bytes | None = None  # FileMetadataExt, as hashlib's digest(); see _sha256_swap

    @property
    def size(self) -> int:
        """The file's length in bytes."""
        return sum(t.unpacked_length for t in self.terms)


@dataclass(frozen=True, slots=True)
class CasChunk:
    """CASChunkSequenceEntry. chunk_hash is as stored: keyed when the shard has a chunk hash key."""

    chunk_hash: bytes
    byte_range_start: int
    unpacked_bytes: int
    flags: int = 0

    @property
    def global_dedup_eligible(self) -> bool:
        """Chunk Flags bit 31: the chunk may be queried in global dedup."""
        return bool(self.flags & GLOBAL_DEDUP_ELIGIBLE)


@dataclass(frozen=True, slots=True)
class CasBlock:
    """A xorb and its chunks in xorb order. Its CAS flags are reserved, MUST be 0, not kept."""

    xorb_hash: bytes
    chunks: tuple[CasChunk, ...]
    num_bytes_in_cas: int
    num_bytes_on_disk: int


def cas_block(
    footer: XorbFooter, num_bytes_on_disk: int, eligible: Callable[[bytes], bool]
) -> CasBlock:
    """The CAS Info Section entry of a xorb; chunks for which eligible() holds are flagged."""
    starts = (0, *footer.unpacked_ends[:-1])  # Chunk Byte Range Start Calculation
    chunks = tuple(
        CasChunk(h, start, size, GLOBAL_DEDUP_ELIGIBLE if eligible(h) else 0)
        for h, start, size in zip(footer.chunk_hashes, starts, footer.chunk_sizes(), strict=True)
    )
    return CasBlock(footer.xorb_hash, chunks, footer.unpacked_ends[-1], num_bytes_on_disk)


@dataclass(frozen=True, slots=True)
class ShardFooter:
    """The footer fields that are not offsets or counts (those follow from the layout)."""

    chunk_hash_key: bytes = ZERO_HASH
    creation_timestamp: int = 0
    key_expiry: int = NO_EXPIRY
    stored_bytes_on_disk: int = 0
    materialized_bytes: int = 0
    stored_bytes: int = 0


@dataclass(frozen=True, slots=True)
class Shard:
    """A shard; footer is None in the upload form."""

    files: tuple[FileBlock, ...] = ()
    cas_blocks: tuple[CasBlock, ...] = ()
    footer: ShardFooter | None = None
    app_id: bytes = HF_APP_ID


def _truncated(h: bytes) -> int:
    """Lookup Tables: the first 8 bytes of a hash as a little-endian u64."""
    return int.from_bytes(h[:8], "little")


def _sha256_swap(h: bytes) -> bytes:
    """FileMetadataExt: a SHA-256 digest to its stored form and back (the map is an involution).

    hf_xet stores the digest as the XET hash whose string form (Hash String Representation)
    is the digest's usual hex, so each 8-byte group is byte-reversed. It stores the empty
    file's as 32 zero bytes.
    """
    return _LE_U64X4.pack(*_BE_U64X4.unpack(h))


def keyed_chunk_hash(key: bytes, h: bytes) -> bytes:
    """Chunk Hash Key Usage: an all-zero key means chunk hashes are stored as they are."""
    return h if key == ZERO_HASH else keyed_hash(key, h)


# --- Serialization -------------------------------------------------------------------------


def _hash(h: bytes, what: str) -> bytes:
    """h, checked to be a hash (struct's "32s" would silently pad or cut it)."""
    if len(h) != HASH_SIZE:
        raise ValueError(f"{what} must be {HASH_SIZE} bytes, got {len(h)}")
    return h


def _header(app_id: bytes, footer_size: int) -> bytes:
    """Header, with the Magic Tag's null-padded application identifier."""
    if len(app_id) > APP_ID_SIZE or b"\0" in app_id:
        raise ValueError(f"application identifier must be at most 14 non-NUL bytes: {app_id!r}")
    tag = app_id.ljust(APP_ID_SIZE, b"\0") + b"\0" + MAGIC_SEQUENCE
    return _HEADER.pack(tag, HEADER_VERSION, footer_size)


def _file_records(block: FileBlock) -> list[bytes]:
    """The records of one file block, header first."""
    flags = (WITH_VERIFICATION if block.verification is not None else 0) | (
        WITH_METADATA_EXT if block.sha256 is not None else 0
    )
    out = [_FILE_HEADER.pack(_hash(block.file_hash, "file hash"), flags, len(block.terms))]
    for t in block.terms:
        if t.start >= t.end:
            raise ValueError(f"term chunk range [{t.start}, {t.end}) is empty")
        out.append(
            _HASH_U32X4.pack(_hash(t.xorb_hash, "xorb hash"), 0, t.unpacked_length, t.start, t.end)
        )
    if block.verification is not None:
        if len(block.verification) != len(block.terms):
            raise ValueError(
                f"{len(block.verification)} verification hashes for {len(block.terms)} terms"
            )
        out.extend(_HASH_RECORD.pack(_hash(h, "verification hash")) for h in block.verification)
    if block.sha256 is not None:
        out.append(_HASH_RECORD.pack(_sha256_swap(_hash(block.sha256, "sha256"))))
    return out


def _cas_records(block: CasBlock) -> list[bytes]:
    """The records of one CAS block, header first."""
    out = [
        _HASH_U32X4.pack(
            _hash(block.xorb_hash, "xorb hash"),
            0,
            len(block.chunks),
            block.num_bytes_in_cas,
            block.num_bytes_on_disk,
        )
    ]
    for c in block.chunks:
        _hash(c.chunk_hash, "chunk hash")
        if c.flags & ~GLOBAL_DEDUP_ELIGIBLE:
            raise ValueError(f"chunk flags {c.flags:#x} set reserved bits")
    out += [
        _CHUNK.pack(c.chunk_hash, c.byte_range_start, c.unpacked_bytes, c.flags)
        for c in block.chunks
    ]
    return out


def _section(blocks: Iterable[list[bytes]]) -> tuple[bytes, list[int]]:
    """A section from its blocks' records, with its bookend, and each block's record index."""
    out: list[bytes] = []
    starts = []
    for records in blocks:
        starts.append(len(out))
        out += records
    out.append(_BOOKEND)
    return b"".join(out), starts


def _block_keys(hashes: Iterable[bytes], starts: Iterable[int]) -> list[tuple[int, int]]:
    """File or CAS Lookup Table entries, unsorted: (truncated hash, record index of the block).

    Lookup indices count 48-byte records from the start of their section, as hf_xet does.
    """
    return list(zip(map(_truncated, hashes), starts, strict=True))


def _chunk_keys(
    cas_section: bytes | memoryview, starts: Sequence[int], blocks: Sequence[CasBlock]
) -> list[tuple[int, int]]:
    """Chunk Lookup Table entries, unsorted: (truncated hash, CAS entry index | chunk index << 32).

    The truncated hashes are read from the serialized chunk entries, so that they are those
    of the hashes as stored (keyed if the shard has a key).
    """
    keys: list[tuple[int, int]] = []
    for start, block in zip(starts, blocks, strict=True):
        first = (start + 1) * RECORD_SIZE
        records = cas_section[first : first + len(block.chunks) * RECORD_SIZE]
        where = range(start, start + (len(block.chunks) << 32), 1 << 32)
        keys += zip((t for (t,) in _TRUNCATED.iter_unpack(records)), where, strict=True)
    return keys


def serialize_upload(shard: Shard) -> bytes:
    """Upload Shard form: footer size 0, no lookup tables, no footer; shard.footer is ignored."""
    files, _ = _section(map(_file_records, shard.files))
    cas, _ = _section(map(_cas_records, shard.cas_blocks))
    return _header(shard.app_id, 0) + files + cas


def footer_for(
    shard: Shard,
    *,
    chunk_hash_key: bytes = ZERO_HASH,
    creation_timestamp: int = 0,
    key_expiry: int = NO_EXPIRY,
) -> ShardFooter:
    """A footer whose byte totals are computed from the shard as hf_xet computes them."""
    return ShardFooter(
        chunk_hash_key=_hash(chunk_hash_key, "chunk hash key"),
        creation_timestamp=creation_timestamp,
        key_expiry=key_expiry,
        stored_bytes_on_disk=sum(b.num_bytes_on_disk for b in shard.cas_blocks),
        materialized_bytes=sum(f.size for f in shard.files),
        stored_bytes=sum(b.num_bytes_in_cas for b in shard.cas_blocks),
    )


def serialize_stored(shard: Shard) -> bytes:
    """Stored form: sections, sorted lookup tables and the footer (footer_for(shard) if None)."""
    footer = shard.footer or footer_for(shard)
    files, file_starts = _section(map(_file_records, shard.files))
    cas, cas_starts = _section(map(_cas_records, shard.cas_blocks))
    file_lookup = sorted(_block_keys((f.file_hash for f in shard.files), file_starts))
    cas_lookup = sorted(_block_keys((b.xorb_hash for b in shard.cas_blocks), cas_starts))
    chunk_lookup = sorted(_chunk_keys(cas, cas_starts, shard.cas_blocks))
    cas_offset = HEADER_SIZE + len(files)
    file_lookup_offset = cas_offset + len(cas)
    cas_lookup_offset = file_lookup_offset + _LOOKUP.size * len(file_lookup)
    chunk_lookup_offset = cas_lookup_offset + _LOOKUP.size * len(cas_lookup)
    footer_offset = chunk_lookup_offset + _CHUNK_LOOKUP.size * len(chunk_lookup)
    return b"".join(
        [
            _header(shard.app_id, FOOTER_SIZE),
            files,
            cas,
            *starmap(_LOOKUP.pack, file_lookup),
            *starmap(_LOOKUP.pack, cas_lookup),
            *starmap(_CHUNK_LOOKUP.pack, chunk_lookup),
            _FOOTER.pack(
                FOOTER_VERSION,
                HEADER_SIZE,
                cas_offset,
                file_lookup_offset,
                len(file_lookup),
                cas_lookup_offset,
                len(cas_lookup),
                chunk_lookup_offset,
                len(chunk_lookup),
                _hash(footer.chunk_hash_key, "chunk hash key"),
                footer.creation_timestamp,
                footer.key_expiry,
                footer.stored_bytes_on_disk,
                footer.materialized_bytes,
                footer.stored_bytes,
                footer_offset,
            ),
        ]
    )


# --- Parsing -------------------------------------------------------------------------------


def _error(field: str, offset: int, value: object) -> ShardFormatError:
    """The one exception parsing raises."""
    return ShardFormatError("shard", field, offset, value)


def _zeros(view: memoryview, at: int, size: int, field: str) -> None:
    """Reserved (zeros): the size bytes at at must be zero."""
    if any(view[at : at + size]):
        raise _error(field, at, bytes(view[at : at + size]))


def _records_fit(
    view: memoryview, pos: int, limit: int, count: int, field: str, at: int
) -> memoryview:
    """The count records at pos, if they end by limit; else an error on the count field at at."""
    if count * RECORD_SIZE > limit - pos:
        raise _error(field, at, count)
    return view[pos : pos + count * RECORD_SIZE]


def _at_bookend(view: memoryview, pos: int, limit: int, section: str) -> bool:
    """Whether the record at pos is the section's bookend; a section must end with one."""
    if limit - pos < RECORD_SIZE:
        raise _error(f"{section} bookend", pos, f"missing, {max(limit - pos, 0)} bytes left")
    if view[pos : pos + HASH_SIZE] != _BOOKEND[:HASH_SIZE]:
        return False
    if view[pos : pos + RECORD_SIZE] != _BOOKEND:
        raise _error(
            f"{section} bookend", pos + HASH_SIZE, bytes(view[pos + HASH_SIZE : pos + RECORD_SIZE])
        )
    return True


def _parse_file_block(view: memoryview, pos: int, limit: int) -> tuple[FileBlock, int]:
    """File Block Structure at pos; returns the block and the position after it."""
    file_hash, flags, count = _FILE_HEADER.unpack_from(view, pos)
    _zeros(view, pos + _AT_FILE_RESERVED, 8, "file header reserved")  # FileDataSequenceHeader
    if flags & ~_FILE_FLAGS:
        # Unknown flags may announce records this parser would misread as the next block.
        raise _error("file flags", pos + _AT_FLAGS, flags)
    with_verification = bool(flags & WITH_VERIFICATION)
    with_ext = bool(flags & WITH_METADATA_EXT)
    body = pos + RECORD_SIZE
    n_records = count * (2 if with_verification else 1) + int(with_ext)
    _records_fit(view, body, limit, n_records, "file num entries", pos + _AT_COUNT)
    terms = []
    for i, (xorb_hash, cas_flags, size, start, end) in enumerate(
        _HASH_U32X4.iter_unpack(view[body : body + count * RECORD_SIZE])
    ):
        at = body + i * RECORD_SIZE
        if cas_flags:
            raise _error("term cas flags", at + _AT_FLAGS, cas_flags)
        if start >= end:
            raise _error("term chunk range", at + _AT_CHUNK_RANGE, (start, end))
        terms.append(Term(xorb_hash, start, end, size))
    pos = body + count * RECORD_SIZE
    verification = None
    if with_verification:
        records = view[pos : pos + count * RECORD_SIZE]
        for i in range(count):  # FileVerificationEntry
            _zeros(view, pos + i * RECORD_SIZE + HASH_SIZE, 16, "verification reserved")
        verification = tuple(h for (h,) in _HASH_RECORD.iter_unpack(records))
        pos += count * RECORD_SIZE
    sha256 = None
    if with_ext:
        _zeros(view, pos + HASH_SIZE, 16, "metadata ext reserved")  # FileMetadataExt
        sha256 = _sha256_swap(bytes(view[pos : pos + HASH_SIZE]))
        pos += RECORD_SIZE
    return FileBlock(file_hash, tuple(terms), verification, sha256), pos


def _parse_cas_block(view: memoryview, pos: int, limit: int) -> tuple[CasBlock, int]:
    """CAS Block Structure at pos; returns the block and the position after it."""
    xorb_hash, cas_flags, count, in_cas, on_disk = _HASH_U32X4.unpack_from(view, pos)
    if cas_flags:
        raise _error("cas flags", pos + _AT_FLAGS, cas_flags)
    body = pos + RECORD_SIZE
    records = _records_fit(view, body, limit, count, "cas num entries", pos + _AT_COUNT)
    chunks = tuple(starmap(CasChunk, _CHUNK.iter_unpack(records)))
    for i, chunk in enumerate(chunks):
        at = body + i * RECORD_SIZE
        if chunk.flags & ~GLOBAL_DEDUP_ELIGIBLE:
            raise _error("chunk flags", at + _AT_CHUNK_FLAGS, chunk.flags)
        _zeros(view, at + _AT_CHUNK_RESERVED, 4, "chunk reserved")  # CASChunkSequenceEntry
    return CasBlock(xorb_hash, chunks, in_cas, on_disk), body + count * RECORD_SIZE


def _parse_section(
    view: memoryview,
    pos: int,
    limit: int,
    section: str,
    parse_block: Callable[[memoryview, int, int], tuple[_Block, int]],
) -> tuple[list[_Block], list[int], int]:
    """Blocks up to the bookend, each block's record index, and the position after the bookend."""
    start = pos
    blocks: list[_Block] = []
    starts = []
    while not _at_bookend(view, pos, limit, section):
        starts.append((pos - start) // RECORD_SIZE)
        block, pos = parse_block(view, pos, limit)
        blocks.append(block)
    return blocks, starts, pos + RECORD_SIZE


def _check_lookup(
    view: memoryview,
    offset: int,
    count: int,
    record: struct.Struct,
    table: str,
    keys: list[tuple[int, int]],
) -> None:
    """Lookup Tables: sorted by truncated hash, each entry naming a block or chunk with its hash."""
    entries = list(record.iter_unpack(view[offset : offset + count * record.size]))
    truncated_hashes = [truncated for truncated, _ in entries]
    if truncated_hashes == sorted(truncated_hashes) and set(entries) <= set(keys):
        return
    # Something is wrong: find the first bad entry to name it.
    expected = {where: truncated for truncated, where in keys}
    previous = 0
    for i, (truncated, where) in enumerate(entries):
        at = offset + i * record.size
        if truncated < previous:
            raise _error(f"{table} lookup order", at, truncated)
        wanted = expected.get(where)
        if wanted is None:
            value = where if record is _LOOKUP else (where & 0xFFFFFFFF, where >> 32)
            raise _error(f"{table} lookup index", at + 8, value)
        if wanted != truncated:
            raise _error(f"{table} lookup truncated hash", at, truncated)
        previous = truncated


def parse_shard(data: bytes | bytearray | memoryview) -> Shard:
    """Parse either form; footer is None for the upload form. Raises only ShardFormatError."""
    view = memoryview(data).cast("B")
    n = len(view)
    if n < HEADER_SIZE:
        raise _error("shard length", 0, n)
    tag, version, footer_size = _HEADER.unpack_from(view, 0)
    # Magic Tag
    if tag[APP_ID_SIZE + 1 :] != MAGIC_SEQUENCE:
        raise _error("magic sequence", APP_ID_SIZE + 1, tag[APP_ID_SIZE + 1 :])
    if tag[APP_ID_SIZE]:
        raise _error("tag null byte", APP_ID_SIZE, tag[APP_ID_SIZE])
    app_id = tag[:APP_ID_SIZE].rstrip(b"\0")
    if b"\0" in app_id:
        raise _error("application identifier", 0, tag[:APP_ID_SIZE])
    if version != HEADER_VERSION:
        raise _error("header version", 32, version)
    if footer_size == 0:
        files, _, pos = _parse_section(view, HEADER_SIZE, n, "file info", _parse_file_block)
        cas_blocks, _, pos = _parse_section(view, pos, n, "cas info", _parse_cas_block)
        if pos != n:
            raise _error("trailing bytes", pos, n - pos)
        return Shard(tuple(files), tuple(cas_blocks), None, app_id)
    if footer_size != FOOTER_SIZE:
        raise _error("footer size", 40, footer_size)
    return _parse_stored(view, app_id)


def _parse_stored(view: memoryview, app_id: bytes) -> Shard:
    """The rest of a stored shard (Footer, Lookup Tables) after its header was checked."""
    n = len(view)
    if n < HEADER_SIZE + 2 * RECORD_SIZE + FOOTER_SIZE:
        raise _error("shard length", 0, n)
    foot = n - FOOTER_SIZE
    fields = _FOOTER.unpack_from(view, foot)
    offsets = dict(zip(_FOOTER_FIELDS, fields, strict=False)) | {"footer offset": fields[-1]}

    def require(ok: bool, field: str) -> None:
        if not ok:
            raise _error(field, foot + _AT_FOOTER[field], offsets[field])

    require(offsets["footer version"] == FOOTER_VERSION, "footer version")
    _zeros(view, foot + _AT_FOOTER_RESERVED, 48, "footer reserved")
    require(offsets["footer offset"] == foot, "footer offset")
    # Overall Structure: header, file info, CAS info, the three lookup tables, footer.
    require(offsets["file info offset"] == HEADER_SIZE, "file info offset")
    cas_offset = offsets["cas info offset"]
    require(HEADER_SIZE + RECORD_SIZE <= cas_offset <= foot - RECORD_SIZE, "cas info offset")
    file_lookup_offset = offsets["file lookup offset"]
    require(cas_offset + RECORD_SIZE <= file_lookup_offset <= foot, "file lookup offset")
    tables = []
    table_offset = file_lookup_offset
    for name, record in (("file", _LOOKUP), ("cas", _LOOKUP), ("chunk", _CHUNK_LOOKUP)):
        require(offsets[f"{name} lookup offset"] == table_offset, f"{name} lookup offset")
        count = offsets[f"{name} lookup num entries"]
        require(count * record.size <= foot - table_offset, f"{name} lookup num entries")
        tables.append((table_offset, count, record, name))
        table_offset += count * record.size
    require(table_offset == foot, "chunk lookup num entries")

    files, file_starts, end = _parse_section(
        view, HEADER_SIZE, cas_offset, "file info", _parse_file_block
    )
    require(end == cas_offset, "cas info offset")
    cas_blocks, cas_starts, end = _parse_section(
        view, cas_offset, file_lookup_offset, "cas info", _parse_cas_block
    )
    require(end == file_lookup_offset, "file lookup offset")

    keys = (
        _block_keys((f.file_hash for f in files), file_starts),
        _block_keys((b.xorb_hash for b in cas_blocks), cas_starts),
        _chunk_keys(view[cas_offset:file_lookup_offset], cas_starts, cas_blocks),
    )
    for table_keys, table in zip(keys, tables, strict=True):
        _check_lookup(view, *table, table_keys)
    key, created, expiry, on_disk, materialized, stored = fields[9:15]
    footer = ShardFooter(key, created, expiry, on_disk, materialized, stored)
    return Shard(tuple(files), tuple(cas_blocks), footer, app_id)


# --- Deduplication and verification ----------------------------------------------------------


def keyed_dedup_shard(
    cas_blocks: Iterable[CasBlock], key: bytes, *, creation_timestamp: int, key_expiry: int
) -> Shard:
    """A global dedup response (Query Chunk Deduplication): CAS blocks with keyed chunk hashes."""
    blocks = tuple(cas_blocks)
    footer = footer_for(
        Shard(cas_blocks=blocks),
        chunk_hash_key=key,
        creation_timestamp=creation_timestamp,
        key_expiry=key_expiry,
    )
    keyed = tuple(
        CasBlock(
            b.xorb_hash,
            tuple(
                CasChunk(
                    keyed_chunk_hash(key, c.chunk_hash),
                    c.byte_range_start,
                    c.unpacked_bytes,
                    c.flags,
                )
                for c in b.chunks
            ),
            b.num_bytes_in_cas,
            b.num_bytes_on_disk,
        )
        for b in blocks
    )
    return Shard(cas_blocks=keyed, footer=footer)


def dedup_matches(
    shard: Shard, chunk_hashes: Iterable[bytes], now: int
) -> dict[bytes, tuple[bytes, int]]:
    """Chunk Hash Key Usage: for each local chunk hash found, its first (xorb hash, chunk index).

    A shard whose key expired (now, in Unix seconds, past its key expiry) matches nothing.
    """
    footer = shard.footer
    if footer is not None and now > footer.key_expiry:
        return {}
    key = ZERO_HASH if footer is None else footer.chunk_hash_key
    wanted = {keyed_chunk_hash(key, h): h for h in chunk_hashes}
    matches: dict[bytes, tuple[bytes, int]] = {}
    for block in shard.cas_blocks:
        for i, chunk in enumerate(block.chunks):
            local = wanted.get(chunk.chunk_hash)
            if local is not None and local not in matches:
                matches[local] = (block.xorb_hash, i)
    return matches


def verify_file_block(
    block: FileBlock, chunk_hashes: Callable[[bytes, int, int], Sequence[bytes]]
) -> None:
    """Term Verification Hashes: check each term against chunk_hashes(xorb_hash, start, end).

    Raises HashMismatchError on a mismatch, ValueError if the block has no verification entries.
    """
    if block.verification is None:
        raise ValueError(f"file {hash_to_string(block.file_hash)} has no verification entries")
    for i, (term, expected) in enumerate(zip(block.terms, block.verification, strict=True)):
        actual = verification_hash(chunk_hashes(term.xorb_hash, term.start, term.end))
        if actual != expected:
            raise HashMismatchError(
                f"file {hash_to_string(block.file_hash)} term {i} verification",
                hash_to_string(expected),
                hash_to_string(actual),
            )


def verify_cas_block(block: CasBlock, footer: XorbFooter, xorb_size: int) -> None:
    """CAS Info Section: check a block (unkeyed) against its xorb's verified footer and size.

    Every chunk of the xorb, in order, with its hash, byte range start (Chunk Byte Range Start
    Calculation) and size; Num Bytes in CAS is the xorb's unpacked size. Num Bytes on Disk
    is 0 (hf_xet leaves it so), the chunk region's size (hf_xet uploads no footer) or the
    stored xorb's. Raises ShardMismatchError naming the first field that disagrees.
    """
    name = f"cas block of xorb {hash_to_string(block.xorb_hash)}"

    def require(ok: bool, field: str, value: int, expected: object) -> None:
        if not ok:
            raise ShardMismatchError(f"{name}: {field} is {value}, its xorb has {expected}")

    require(
        len(block.chunks) == footer.num_chunks, "num entries", len(block.chunks), footer.num_chunks
    )
    start = 0
    for i, (chunk, h, size) in enumerate(
        zip(block.chunks, footer.chunk_hashes, footer.chunk_sizes(), strict=True)
    ):
        if chunk.chunk_hash != h:
            raise ShardMismatchError(
                f"{name}: chunk {i} hash is {hash_to_string(chunk.chunk_hash)}, "
                f"its xorb has {hash_to_string(h)}"
            )
        require(
            chunk.byte_range_start == start,
            f"chunk {i} byte_range_start",
            chunk.byte_range_start,
            start,
        )
        require(
            chunk.unpacked_bytes == size, f"chunk {i} unpacked_bytes", chunk.unpacked_bytes, size
        )
        start += size
    require(block.num_bytes_in_cas == start, "num bytes in cas", block.num_bytes_in_cas, start)
    on_disk = (0, footer.packed_ends[-1] if footer.packed_ends else 0, xorb_size)
    require(
        block.num_bytes_on_disk in on_disk,
        "num bytes on disk",
        block.num_bytes_on_disk,
        f"{on_disk[2]} bytes ({on_disk[1]} without its footer; 0 if unknown)",
    )
