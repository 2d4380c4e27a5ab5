"""Shards: both forms round-trip, the layout is the spec's, every MUST is enforced, keyed dedup."""

import contextlib
import hashlib
import struct
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arkfs.xet.errors import HashMismatchError, ShardFormatError, ShardMismatchError
from arkfs.xet.hashing import chunk_hash, hash_to_string, keyed_hash, string_to_hash
from arkfs.xet.reconstruction import Term
from arkfs.xet.shard import (
    GLOBAL_DEDUP_ELIGIBLE,
    MAGIC_SEQUENCE,
    CasBlock,
    CasChunk,
    FileBlock,
    Shard,
    ShardFooter,
    cas_block,
    dedup_matches,
    footer_for,
    keyed_dedup_shard,
    parse_shard,
    serialize_stored,
    serialize_upload,
    verify_cas_block,
    verify_file_block,
)
from arkfs.xet.xorb import serialize_xorb
from tests.support.hfxet import upload_files
from tests.support.recording_cas import recording_cas

U32 = 2**32 - 1
U64 = 2**64 - 1


def h(n: int) -> bytes:
    """A hash whose truncated form (first 8 bytes, little-endian) is n."""
    return n.to_bytes(8, "little") * 4


def u32(data: bytes, at: int) -> int:
    return int.from_bytes(data[at : at + 4], "little")


def u64(data: bytes, at: int) -> int:
    return int.from_bytes(data[at : at + 8], "little")


def patch(data: bytes, at: int, fmt: str, *values: int | bytes) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, at, *values)
    return bytes(out)


# --- Strategies ----------------------------------------------------------------------------

# A small pool makes equal hashes (ties in the lookup tables) common.
hashes = st.binary(min_size=32, max_size=32) | st.sampled_from([h(1), h(2), bytes(32)])
u32s = st.integers(0, U32)
u64s = st.integers(0, U64)
terms = st.integers(0, U32 - 1).flatmap(
    lambda start: st.builds(Term, hashes, st.just(start), st.integers(start + 1, U32), u32s)
)
file_blocks = st.lists(terms, max_size=4).flatmap(
    lambda ts: st.builds(
        FileBlock,
        hashes,
        st.just(tuple(ts)),
        st.none() | st.lists(hashes, min_size=len(ts), max_size=len(ts)).map(tuple),
        st.none() | hashes,
    )
)
cas_chunks = st.builds(CasChunk, hashes, u32s, u32s, st.sampled_from([0, GLOBAL_DEDUP_ELIGIBLE]))
cas_blocks = st.builds(CasBlock, hashes, st.lists(cas_chunks, max_size=5).map(tuple), u32s, u32s)
app_ids = st.lists(st.integers(1, 255), max_size=14).map(bytes)
footers = st.builds(ShardFooter, hashes, u64s, u64s, u64s, u64s, u64s)


def shards(footer: st.SearchStrategy[ShardFooter | None]) -> st.SearchStrategy[Shard]:
    return st.builds(
        Shard,
        st.lists(file_blocks, max_size=3).map(tuple),
        st.lists(cas_blocks, max_size=3).map(tuple),
        footer,
        app_ids,
    )


# --- Round trips ---------------------------------------------------------------------------


@given(shards(st.none() | footers))
def test_upload_form_round_trips(shard: Shard) -> None:
    data = serialize_upload(shard)
    parsed = parse_shard(data)
    assert parsed == replace(shard, footer=None)
    assert serialize_upload(parsed) == data


@given(shards(footers))
def test_stored_form_round_trips(shard: Shard) -> None:
    data = serialize_stored(shard)
    parsed = parse_shard(data)
    assert parsed == shard
    assert serialize_stored(parsed) == data


@given(shards(st.none()))
def test_stored_form_without_footer_gets_computed_totals(shard: Shard) -> None:
    assert parse_shard(serialize_stored(shard)).footer == footer_for(shard)


def test_footer_for_sums_bytes() -> None:
    shard = Shard(
        files=(FileBlock(h(1), (Term(h(2), 0, 1, 10), Term(h(2), 1, 2, 5))),),
        cas_blocks=(CasBlock(h(2), (), 100, 60), CasBlock(h(3), (), 7, 3)),
    )
    footer = footer_for(shard, chunk_hash_key=h(9), creation_timestamp=5, key_expiry=6)
    assert footer == ShardFooter(h(9), 5, 6, 63, 15, 107)


# --- Layout, computed by hand from the spec's tables ---------------------------------------

CONTENT = b"the file whose SHA-256 goes in the metadata extension"
FILE_F = FileBlock(
    h(50),
    (Term(h(30), 0, 2, 1000), Term(h(20), 0, 1, 500)),
    (h(61), h(62)),
    hashlib.sha256(CONTENT).digest(),
)
FILE_G = FileBlock(h(7), (Term(h(30), 2, 3, 700),))
XORB_X = CasBlock(
    h(30),
    (
        CasChunk(h(300), 0, 600, GLOBAL_DEDUP_ELIGIBLE),
        CasChunk(h(100), 600, 400),
        CasChunk(h(200), 1000, 700),
    ),
    1700,
    900,
)
XORB_Y = CasBlock(h(20), (CasChunk(h(100), 0, 500),), 500, 300)
FOOTER = ShardFooter(h(77), 1_700_000_000, 1_700_003_600, 1200, 2200, 2200)
SHARD = Shard((FILE_F, FILE_G), (XORB_X, XORB_Y), FOOTER)
STORED = serialize_stored(SHARD)
UPLOAD = serialize_upload(SHARD)
# header 48 | F: 1+2+2+1 records at 48 | G: 1+1 at 336 | bookend at 432
# CAS info at 480 | X: 1+3 at 480 | Y: 1+1 at 672 | bookend at 768
# file lookup 2x12 at 816 | CAS lookup 2x12 at 840 | chunk lookup 4x16 at 864 | footer at 928
FOOT = 928


def test_upload_form_layout() -> None:
    assert len(UPLOAD) == 816
    assert UPLOAD[:14] == b"HFRepoMetaData"
    assert UPLOAD[14] == 0
    assert UPLOAD[15:32] == MAGIC_SEQUENCE
    assert (u64(UPLOAD, 32), u64(UPLOAD, 40)) == (2, 0)
    assert UPLOAD[48:] == STORED[48:816]


def test_file_info_layout() -> None:
    assert STORED[48:80] == h(50)
    assert (u32(STORED, 80), u32(STORED, 84), u64(STORED, 88)) == (0xC000_0000, 2, 0)
    assert STORED[96:128] == h(30)
    assert [u32(STORED, 128 + 4 * i) for i in range(4)] == [0, 1000, 0, 2]
    assert STORED[144:176] == h(20)
    assert [u32(STORED, 176 + 4 * i) for i in range(4)] == [0, 500, 0, 1]
    assert (STORED[192:224], STORED[240:272]) == (h(61), h(62))
    assert STORED[224:240] == STORED[272:288] == bytes(16)
    # hf_xet stores the SHA-256 as the XET hash whose string is the digest's usual hex.
    assert STORED[288:320] == string_to_hash(hashlib.sha256(CONTENT).hexdigest())
    assert STORED[320:336] == bytes(16)
    assert STORED[336:368] == h(7)
    assert (u32(STORED, 368), u32(STORED, 372)) == (0, 1)
    assert [u32(STORED, 416 + 4 * i) for i in range(4)] == [0, 700, 2, 3]
    assert STORED[432:480] == b"\xff" * 32 + bytes(16)


def test_cas_info_layout() -> None:
    assert STORED[480:512] == h(30)
    assert [u32(STORED, 512 + 4 * i) for i in range(4)] == [0, 3, 1700, 900]
    chunk_fields = [
        (STORED[at : at + 32], *(u32(STORED, at + 32 + 4 * i) for i in range(4)))
        for at in (528, 576, 624)
    ]
    assert chunk_fields == [
        (h(300), 0, 600, 1 << 31, 0),
        (h(100), 600, 400, 0, 0),
        (h(200), 1000, 700, 0, 0),
    ]
    assert STORED[672:704] == h(20)
    assert [u32(STORED, 704 + 4 * i) for i in range(4)] == [0, 1, 500, 300]
    assert STORED[720:752] == h(100)
    assert STORED[768:816] == b"\xff" * 32 + bytes(16)


def test_lookup_tables_layout() -> None:
    def entries(at: int, n: int, fmt: str) -> list[tuple[int, ...]]:
        return list(struct.iter_unpack(fmt, STORED[at : at + n * struct.calcsize(fmt)]))

    # Indices count 48-byte records from the start of the section: G is record 6, Y record 4.
    assert entries(816, 2, "<QI") == [(7, 6), (50, 0)]
    assert entries(840, 2, "<QI") == [(20, 4), (30, 0)]
    chunk_lookup = entries(864, 4, "<QII")
    assert sorted(chunk_lookup) == [(100, 0, 1), (100, 4, 0), (200, 0, 2), (300, 0, 0)]
    assert [e[0] for e in chunk_lookup] == [100, 100, 200, 300]


def test_footer_layout() -> None:
    assert len(STORED) == FOOT + 200
    assert u64(STORED, 40) == 200
    offsets = [u64(STORED, FOOT + 8 * i) for i in range(9)]
    assert offsets == [1, 48, 480, 816, 2, 840, 2, 864, 4]
    assert STORED[FOOT + 72 : FOOT + 104] == h(77)
    assert (u64(STORED, FOOT + 104), u64(STORED, FOOT + 112)) == (1_700_000_000, 1_700_003_600)
    assert STORED[FOOT + 120 : FOOT + 168] == bytes(48)
    totals = [u64(STORED, FOOT + 168 + 8 * i) for i in range(4)]
    assert totals == [1200, 2200, 2200, FOOT]


def test_parsed_layout_shard_and_app_id() -> None:
    assert parse_shard(STORED) == SHARD
    assert parse_shard(UPLOAD) == replace(SHARD, footer=None)
    assert FILE_F.size == 1500
    assert XORB_X.chunks[0].global_dedup_eligible and not XORB_X.chunks[1].global_dedup_eligible
    short = serialize_upload(Shard(app_id=b"Ark"))
    assert short[:15] == b"Ark" + bytes(12)
    assert parse_shard(short).app_id == b"Ark"


# --- Every rule of the parser --------------------------------------------------------------


def swap(data: bytes, a: int, b: int, size: int) -> bytes:
    out = bytearray(data)
    out[a : a + size], out[b : b + size] = data[b : b + size], data[a : a + size]
    return bytes(out)


BAD: list[tuple[str, Callable[[], bytes], str, int]] = [
    ("too short", lambda: STORED[:47], "shard length", 0),
    ("magic", lambda: patch(STORED, 20, "<B", 0), "magic sequence", 15),
    ("tag null", lambda: patch(STORED, 14, "<B", 1), "tag null byte", 14),
    ("app id padding", lambda: patch(STORED, 0, "<14s", b"AB\0CD"), "application identifier", 0),
    ("header version", lambda: patch(STORED, 32, "<Q", 3), "header version", 32),
    ("footer size", lambda: patch(STORED, 40, "<Q", 100), "footer size", 40),
    ("no room for footer", lambda: patch(UPLOAD, 40, "<Q", 200)[:300], "shard length", 0),
    ("footer version", lambda: patch(STORED, FOOT, "<Q", 2), "footer version", FOOT),
    ("footer offset", lambda: patch(STORED, FOOT + 192, "<Q", 0), "footer offset", FOOT + 192),
    ("file info offset", lambda: patch(STORED, FOOT + 8, "<Q", 96), "file info offset", FOOT + 8),
    ("cas offset bounds", lambda: patch(STORED, FOOT + 16, "<Q", 10**6), "cas info offset", 944),
    ("cas offset vs file end", lambda: patch(STORED, FOOT + 16, "<Q", 528), "cas info offset", 944),
    ("file lookup bounds", lambda: patch(STORED, FOOT + 24, "<Q", 0), "file lookup offset", 952),
    (
        "file lookup vs cas end",
        lambda: patch(STORED, FOOT + 24, "<QQ", 828, 1),
        "file lookup offset",
        952,
    ),
    ("file lookup count", lambda: patch(STORED, 960, "<Q", 10**6), "file lookup num entries", 960),
    ("cas lookup offset", lambda: patch(STORED, 968, "<Q", 0), "cas lookup offset", 968),
    ("cas lookup count", lambda: patch(STORED, 976, "<Q", 10**6), "cas lookup num entries", 976),
    ("chunk lookup offset", lambda: patch(STORED, 984, "<Q", 0), "chunk lookup offset", 984),
    ("chunk lookup count", lambda: patch(STORED, 992, "<Q", 3), "chunk lookup num entries", 992),
    ("file flags", lambda: patch(STORED, 80, "<I", 0xC000_0001), "file flags", 80),
    ("file count", lambda: patch(STORED, 84, "<I", 1000), "file num entries", 84),
    ("term cas flags", lambda: patch(STORED, 128, "<I", 1), "term cas flags", 128),
    ("term range", lambda: patch(STORED, 136, "<I", 2), "term chunk range", 136),
    ("file bookend tail", lambda: patch(STORED, 472, "<B", 1), "file info bookend", 464),
    ("file bookend missing", lambda: UPLOAD[:432], "file info bookend", 432),
    ("cas flags", lambda: patch(STORED, 512, "<I", 1), "cas flags", 512),
    ("cas count", lambda: patch(STORED, 516, "<I", 1000), "cas num entries", 516),
    ("chunk flags", lambda: patch(STORED, 568, "<I", 1), "chunk flags", 568),
    ("cas bookend missing", lambda: UPLOAD[:768], "cas info bookend", 768),
    ("trailing bytes", lambda: UPLOAD + bytes(48), "trailing bytes", 816),
    ("file lookup order", lambda: swap(STORED, 816, 828, 12), "file lookup order", 828),
    ("file lookup index", lambda: patch(STORED, 824, "<I", 5), "file lookup index", 824),
    ("file lookup hash", lambda: patch(STORED, 816, "<Q", 8), "file lookup truncated hash", 816),
    ("cas lookup order", lambda: swap(STORED, 840, 852, 12), "cas lookup order", 852),
    ("cas lookup index", lambda: patch(STORED, 848, "<I", 1), "cas lookup index", 848),
    ("cas lookup hash", lambda: patch(STORED, 840, "<Q", 21), "cas lookup truncated hash", 840),
    ("chunk lookup order", lambda: swap(STORED, 896, 912, 16), "chunk lookup order", 912),
    ("chunk lookup xorb", lambda: patch(STORED, 872, "<I", 1), "chunk lookup index", 872),
    ("chunk lookup chunk", lambda: patch(STORED, 876, "<I", 9), "chunk lookup index", 872),
    ("chunk lookup hash", lambda: patch(STORED, 864, "<Q", 99), "chunk lookup truncated hash", 864),
]


@pytest.mark.parametrize(("make", "field", "offset"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_parser_rule(make: Callable[[], bytes], field: str, offset: int) -> None:
    with pytest.raises(ShardFormatError) as info:
        parse_shard(make())
    assert (info.value.field, info.value.offset) == (field, offset)
    assert field in str(info.value) and f"offset {offset}" in str(info.value)


RESERVED = [
    ("file header reserved", 88, 8),
    ("verification reserved", 224, 16),
    ("metadata ext reserved", 320, 16),
    ("chunk reserved", 572, 4),
    ("footer reserved", FOOT + 120, 48),
]


@pytest.mark.parametrize(("field", "at", "size"), RESERVED, ids=[r[0] for r in RESERVED])
def test_reserved_fields_must_be_zero(field: str, at: int, size: int) -> None:
    # A bit set in a Reserved (zeros) field is damage, or a format this parser does not know.
    with pytest.raises(ShardFormatError) as info:
        parse_shard(patch(STORED, at + size - 1, "<B", 0x80))
    assert (info.value.field, info.value.offset) == (field, at)


def test_tolerates_what_the_spec_does_not_require() -> None:
    # Lookup tables may leave entries out (hf_xet's keyed export can omit them all).
    footer = struct.pack(
        "<9Q32sQQ48x4Q", 1, 48, 480, 816, 0, 816, 0, 816, 0, bytes(32), 0, 0, 0, 0, 0, 816
    )
    parsed = parse_shard(patch(UPLOAD, 40, "<Q", 200) + footer)
    assert (parsed.files, parsed.cas_blocks) == (SHARD.files, SHARD.cas_blocks)


def test_serializer_rejects_what_it_cannot_write() -> None:
    bad_shards = [
        Shard(app_id=b"fifteen bytes!!"),
        Shard(app_id=b"a\0b"),
        Shard(files=(FileBlock(b"short", ()),)),
        Shard(files=(FileBlock(h(1), (Term(h(2), 3, 3, 1),)),)),
        Shard(files=(FileBlock(h(1), (Term(h(2), 0, 1, 1),), ()),)),
        Shard(cas_blocks=(CasBlock(h(1), (CasChunk(h(2), 0, 1, 1),), 1, 1),)),
        Shard(cas_blocks=(CasBlock(h(1), (CasChunk(b"", 0, 1),), 1, 1),)),
    ]
    for shard in bad_shards:
        with pytest.raises(ValueError):
            serialize_upload(shard)


# --- Fuzzing: only ShardFormatError, whatever the input ------------------------------------


def parse_or_format_error(data: bytes) -> None:
    with contextlib.suppress(ShardFormatError):
        parse_shard(data)


@settings(max_examples=300)
@given(st.binary(max_size=1500))
def test_fuzz_random_bytes(data: bytes) -> None:
    parse_or_format_error(data)


@settings(max_examples=300)
@given(st.sampled_from([STORED[:48], UPLOAD[:48]]), st.binary(max_size=1500))
def test_fuzz_valid_header_random_rest(header: bytes, rest: bytes) -> None:
    parse_or_format_error(header + rest)


@settings(max_examples=400)
@given(
    shards(st.none() | footers),
    st.booleans(),
    st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), max_size=4),
    st.none() | st.integers(0, 10**6),
)
def test_fuzz_mutated_shards(
    shard: Shard, stored: bool, flips: list[tuple[int, int]], cut: int | None
) -> None:
    data = bytearray(serialize_stored(shard) if stored else serialize_upload(shard))
    for at, byte in flips:
        data[at % len(data)] = byte
    parse_or_format_error(bytes(data[:cut]))


@settings(max_examples=200)
@given(st.integers(0, len(STORED) - 1), st.integers(0, 255), st.integers(0, len(STORED)))
def test_fuzz_layout_shard(at: int, byte: int, cut: int) -> None:
    data = bytearray(STORED)
    data[at] = byte
    parse_or_format_error(bytes(data))
    parse_or_format_error(bytes(data[:cut]))


# --- Keyed global dedup --------------------------------------------------------------------

KEY = bytes(range(32))
EXPIRY = 1_700_003_600


def test_keyed_dedup_shard_stores_keyed_hashes() -> None:
    response = keyed_dedup_shard([XORB_X, XORB_Y], KEY, creation_timestamp=1, key_expiry=EXPIRY)
    data = serialize_stored(response)
    footer_at = len(data) - 200
    assert data[footer_at + 72 : footer_at + 104] == KEY
    assert u64(data, footer_at + 112) == EXPIRY
    # CAS Info: the chunk hashes are keyed_hash(key, chunk hash); the raw hashes never appear.
    assert data[48:96] == b"\xff" * 32 + bytes(16)  # no file info
    assert data[96 + 48 : 96 + 80] == keyed_hash(KEY, h(300))
    for raw in (h(100), h(200), h(300)):
        assert raw not in data
    # The chunk lookup table is of the keyed hashes.
    parsed = parse_shard(data)
    keyed = [c.chunk_hash for b in parsed.cas_blocks for c in b.chunks]
    chunk_lookup_at = u64(data, footer_at + 56)
    truncated = [u64(data, chunk_lookup_at + 16 * i) for i in range(4)]
    assert truncated == sorted(int.from_bytes(k[:8], "little") for k in keyed)
    assert parsed.footer == ShardFooter(KEY, 1, EXPIRY, 1200, 0, 2200)


def test_dedup_matches_local_hashes_until_expiry() -> None:
    response = keyed_dedup_shard([XORB_X, XORB_Y], KEY, creation_timestamp=1, key_expiry=EXPIRY)
    parsed = parse_shard(serialize_stored(response))
    local = [h(200), h(100), h(999)]
    expected = {h(200): (h(30), 2), h(100): (h(30), 1)}  # first occurrence of h(100) is in X
    assert dedup_matches(parsed, local, now=EXPIRY - 100) == expected
    assert dedup_matches(parsed, local, now=EXPIRY) == expected
    assert dedup_matches(parsed, local, now=EXPIRY + 1) == {}
    # Matching the keyed hashes themselves must not work: clients key their own hashes.
    keyed = [keyed_hash(KEY, x) for x in local]
    assert dedup_matches(parsed, keyed, now=0) == {}


def test_dedup_matches_without_key() -> None:
    unkeyed = keyed_dedup_shard([XORB_Y], bytes(32), creation_timestamp=0, key_expiry=EXPIRY)
    assert unkeyed.cas_blocks == (XORB_Y,)
    assert dedup_matches(unkeyed, [h(100)], now=EXPIRY) == {h(100): (h(20), 0)}
    no_footer = Shard(cas_blocks=(XORB_Y,))
    assert dedup_matches(no_footer, [h(100)], now=U64) == {h(100): (h(20), 0)}


# --- Term verification ---------------------------------------------------------------------

# Verification Range Hash Test Vector
SPEC_CHUNKS = [
    bytes.fromhex("aad4607a38588fc2777f7cda1c310c209e86f564486186f6694aa1d065f7ebad"),
    bytes.fromhex("2cce73e063324e6e271e360c77cc780e65ab984b053bdb78220fa74f08fc77e2"),
]
SPEC_RANGE_HASH = string_to_hash("eb06a8ad81d588ac05d1d9a079232d9c1e7d0b07232fa58091caa7bf333a2768")


def spec_chunks(xorb_hash: bytes, start: int, end: int) -> list[bytes]:
    assert xorb_hash == h(30)
    return SPEC_CHUNKS[start:end]


def test_verify_file_block_spec_vector() -> None:
    block = FileBlock(h(1), (Term(h(30), 0, 2, 10),), (SPEC_RANGE_HASH,))
    verify_file_block(block, spec_chunks)
    # A second term over chunk 1 alone does not have the two-chunk range hash.
    two_terms = FileBlock(
        h(1),
        (Term(h(30), 0, 2, 10), Term(h(30), 1, 2, 5)),
        (SPEC_RANGE_HASH, SPEC_RANGE_HASH),
    )
    with pytest.raises(HashMismatchError) as info:
        verify_file_block(two_terms, spec_chunks)
    assert info.value.what.endswith("term 1 verification")
    assert info.value.expected == hash_to_string(SPEC_RANGE_HASH)
    with pytest.raises(ValueError):
        verify_file_block(replace(block, verification=None), spec_chunks)


# --- hf_xet, the reference client ----------------------------------------------------------


def test_hf_xet_upload_shard_parses_and_reserializes(tmp_path: Path) -> None:
    contents = {
        "random": bytes(range(256)) * 3000 + b"tail",
        "repeated": hashlib.sha256(b"seed").digest() * 20_000 * 3,
        "one": b"x",
        "empty": b"",
    }
    for name, content in contents.items():
        (tmp_path / name).write_bytes(content)
    with recording_cas() as (url, rec):
        results = upload_files(url, [tmp_path / n for n in contents])
    (body,) = rec.shards
    shard = parse_shard(body)
    assert shard.footer is None and shard.app_id == b"HFRepoMetaData"
    assert serialize_upload(shard) == body
    assert parse_shard(serialize_stored(shard)).files == shard.files
    by_hash = {f.file_hash: f for f in shard.files}
    chunks = {b.xorb_hash: [c.chunk_hash for c in b.chunks] for b in shard.cas_blocks}
    for (name, content), info in zip(contents.items(), results, strict=True):
        block = by_hash[string_to_hash(info.hash)]
        assert block.size == len(content)
        verify_file_block(block, lambda x, start, end: chunks[x][start:end])
        # hf_xet reports, and stores, 32 zero bytes as the empty file's SHA-256.
        assert block.sha256 is not None and block.sha256.hex() == info.sha256, name
        if content:
            assert block.sha256 == hashlib.sha256(content).digest(), name


def test_verify_cas_block_names_the_field_that_disagrees() -> None:
    x = serialize_xorb([(chunk_hash(d), d) for d in (b"a" * 1000, b"b" * 2000, b"c" * 500)])
    good = cas_block(x.footer, len(x.data), lambda _: False)
    assert [c.byte_range_start for c in good.chunks] == [0, 1000, 3000]  # the spec's example
    for on_disk in (0, x.footer.packed_ends[-1], len(x.data)):
        verify_cas_block(replace(good, num_bytes_on_disk=on_disk), x.footer, len(x.data))
    c1 = good.chunks[1]
    bad = [
        (replace(good, chunks=good.chunks[:2]), "num entries"),
        (
            replace(good, chunks=(good.chunks[0], replace(c1, chunk_hash=h(9)), good.chunks[2])),
            "chunk 1 hash",
        ),
        (
            replace(
                good, chunks=(good.chunks[0], replace(c1, byte_range_start=999), good.chunks[2])
            ),
            "chunk 1 byte_range_start",
        ),
        (
            replace(good, chunks=(good.chunks[0], replace(c1, unpacked_bytes=1), good.chunks[2])),
            "chunk 1 unpacked_bytes",
        ),
        (replace(good, num_bytes_in_cas=3499), "num bytes in cas"),
        (replace(good, num_bytes_on_disk=1), "num bytes on disk"),
    ]
    for block, field in bad:
        with pytest.raises(ShardMismatchError, match=field):
            verify_cas_block(block, x.footer, len(x.data))
