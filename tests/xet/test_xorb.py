"""Xorbs: serialize and parse round trips, every validation rule, and corruption."""

import random
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arkfs.xet._bytegroup import ungroup4
from arkfs.xet.compression import Compression, byte_group_4, byte_ungroup_4, compress_best
from arkfs.xet.constants import MAX_CHUNK_SIZE, MAX_XORB_CHUNKS
from arkfs.xet.errors import HashMismatchError, XetError, XorbFormatError
from arkfs.xet.hashing import chunk_hash
from arkfs.xet.xorb import (
    CHUNK_HEADER_SIZE,
    ChunkHeader,
    XorbBuilder,
    decode_range,
    iter_chunks,
    parse_footer,
    parse_xorb,
    serialize_xorb,
    stored_xorb,
)
from tests.support.corpus import corpus

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`


def chunks_of(*datas: bytes) -> list[tuple[bytes, bytes]]:
    return [(chunk_hash(d), d) for d in datas]


def sample_xorb(seed: int = 1, n: int = 6) -> tuple[list[tuple[bytes, bytes]], bytes]:
    rng = random.Random(seed)
    datas = []
    for i in range(n):
        size = rng.randint(1, 70_000)
        datas.append(rng.randbytes(size) if i % 2 else bytes([i]) * size)
    pairs = chunks_of(*datas)
    return pairs, serialize_xorb(pairs).data


chunk_data = st.binary(min_size=1, max_size=3000) | st.builds(
    lambda b, n: b * n, st.binary(min_size=1, max_size=4), st.integers(1, 5000)
)


@settings(max_examples=60)
@given(st.lists(chunk_data, min_size=1, max_size=12), st.sampled_from([None, *Compression]))
def test_round_trip(datas: list[bytes], scheme: Compression | None) -> None:
    pairs = chunks_of(*datas)
    xorb = serialize_xorb(pairs, scheme)
    parsed = parse_xorb(xorb.data, expected_hash=xorb.hash)
    assert list(parsed.chunks) == datas
    assert parsed.footer == xorb.footer
    assert parsed.serialize() == xorb.data
    # The upload form (chunk region only) parses to the same footer.
    assert parse_xorb(xorb.data[: xorb.footer.packed_ends[-1]]).footer == xorb.footer
    # stored_xorb keeps the stored form as it is, and completes the upload form.
    assert stored_xorb(xorb.data, xorb.hash) is xorb.data
    assert stored_xorb(xorb.data[: xorb.footer.packed_ends[-1]], xorb.hash) == xorb.data


@settings(max_examples=25)
@given(st.data())
def test_any_flipped_byte_is_caught(data: st.DataObject) -> None:
    pairs, blob = sample_xorb(seed=data.draw(st.integers(0, 50)), n=4)
    at = data.draw(st.integers(0, len(blob) - 1))
    bit = data.draw(st.integers(0, 7))
    bad = bytearray(blob)
    bad[at] ^= 1 << bit
    try:
        parsed = parse_xorb(bytes(bad))
    except XetError:
        return
    # Whatever parses must not claim the old content: the hash differs or bytes are intact.
    if parsed.footer.xorb_hash == serialize_xorb(pairs).hash:
        assert list(parsed.chunks) == [d for _, d in pairs]


def test_every_single_byte_flip_of_a_small_xorb() -> None:
    pairs = chunks_of(b"a" * 5000, random.Random(3).randbytes(3000), b"xyz" * 900)
    blob = serialize_xorb(pairs).data
    original = [d for _, d in pairs]
    for at in range(len(blob)):
        bad = bytearray(blob)
        bad[at] ^= 0x55
        try:
            parsed = parse_xorb(bytes(bad), expected_hash=serialize_xorb(pairs).hash)
        except XetError:
            with pytest.raises(XetError):  # the lean check refuses it too
                stored_xorb(bytes(bad), serialize_xorb(pairs).hash)
            continue
        assert list(parsed.chunks) == original, at


def test_truncations_are_rejected() -> None:
    _, blob = sample_xorb()
    for cut in (1, 4, 27, 100, len(blob) // 2, len(blob) - 1):
        with pytest.raises(XetError):
            parse_xorb(blob[:cut] if cut < len(blob) else blob[:-1])


def header(version: int = 0, csize: int = 10, scheme: int = 0, usize: int = 10) -> bytes:
    h = ChunkHeader(csize, scheme, usize).pack()
    return bytes([version]) + h[1:]


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        (header(version=1) + bytes(10), "chunk version"),
        (header(scheme=7) + bytes(10), "compression type"),
        (header(usize=0) + bytes(10), "uncompressed size"),
        (header(usize=MAX_CHUNK_SIZE + 1, scheme=1) + bytes(10), "uncompressed size"),
        (header(csize=0) + bytes(10), "compressed size"),
        (header(csize=11, usize=11) + bytes(10), "compressed size"),
        (header(csize=5, usize=10) + bytes(5), "compressed size of an uncompressed chunk"),
        (header()[:5], "chunk header"),
        (header(csize=10, scheme=1, usize=10) + bytes(10), "chunk payload"),
    ],
)
def test_chunk_header_rules(raw: bytes, field: str) -> None:
    with pytest.raises(XorbFormatError) as err:
        list(iter_chunks(raw))
    assert err.value.field == field
    assert "offset" in str(err.value)


def footer_of(blob: bytes) -> tuple[int, int]:
    info = struct.unpack_from("<I", blob, len(blob) - 4)[0]
    return len(blob) - 4 - info, info


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        (lambda b, s: b[:s] + b"XETBLOC" + b[s + 7 :], "main header ident"),
        (lambda b, s: b[:s] + b"XETBLOB\x02" + b[s + 8 :], "main header version"),
        (lambda b, s: b[: s + 40] + b"XBLBHSX" + b[s + 47 :], "hash section ident"),
        (lambda b, s: b[: s + 48] + struct.pack("<I", 3) + b[s + 52 :], "hash section num_chunks"),
        (lambda b, s: b[:-32] + struct.pack("<I", 99) + b[-28:], "trailer num_chunks"),
        (lambda b, s: b[:-28] + struct.pack("<I", 5) + b[-24:], "hashes section offset"),
        (lambda b, s: b[:-24] + struct.pack("<I", 5) + b[-20:], "boundary section offset"),
        (lambda b, s: b[:-20] + b"\x01" + b[-19:], "trailer reserved"),
    ],
)
def test_footer_rules(patch, field: str) -> None:
    _, blob = sample_xorb(n=2)
    start, _ = footer_of(blob)
    with pytest.raises(XorbFormatError) as err:
        parse_footer(patch(blob, start))
    assert err.value.field == field


def test_footer_offsets_must_grow_and_fit() -> None:
    _, blob = sample_xorb(n=3)
    start, _ = footer_of(blob)
    bounds = start + 40 + 12 + 3 * 32 + 12
    swapped = blob[:bounds] + struct.pack("<I", 5) + blob[bounds + 4 :]
    with pytest.raises(XorbFormatError, match="chunk boundary offset"):
        parse_footer(swapped)


def test_footer_hash_must_match_chunks() -> None:
    _, blob = sample_xorb(n=3)
    start, _ = footer_of(blob)
    wrong = blob[: start + 8] + bytes(32) + blob[start + 40 :]
    with pytest.raises(HashMismatchError):
        parse_xorb(wrong)
    with pytest.raises(HashMismatchError):
        parse_xorb(blob, expected_hash=bytes(32))


def test_footer_from_suffix_and_range_decode() -> None:
    pairs, blob = sample_xorb(n=8)
    footer = parse_footer(blob[-3000:], xorb_size=len(blob))
    footer.verify()
    lo, hi = footer.packed_range(2, 5)
    got = decode_range(blob[lo:hi], footer, 2, 5, base=lo)
    assert got == [d for _, d in pairs[2:5]]
    bad = bytearray(blob[lo:hi])
    bad[-1] ^= 1
    with pytest.raises(XetError):
        decode_range(bytes(bad), footer, 2, 5, base=lo)
    with pytest.raises(XorbFormatError):
        decode_range(blob[lo + 1 : hi], footer, 2, 5, base=lo + 1)


def test_compression_choices() -> None:
    data = corpus()
    scheme, _ = compress_best(data["random-5MiB"][:65536])
    assert scheme == Compression.NONE
    scheme, _ = compress_best(data["text"][:65536])
    assert scheme == Compression.LZ4
    scheme, _ = compress_best(data["float32"][:65536])
    assert scheme == Compression.BG4_LZ4
    for n in range(0, 11):
        raw = bytes(range(n))
        assert byte_ungroup_4(byte_group_4(raw)) == raw
    assert byte_group_4(bytes(range(10))) == bytes([0, 4, 8, 1, 5, 9, 2, 6, 3, 7])


@settings(max_examples=200)
@given(st.binary(max_size=70_000))
def test_c_ungroup_matches_the_reference(data: bytes) -> None:
    grouped = byte_group_4(data)
    assert ungroup4(grouped) == byte_ungroup_4(grouped) == data
    assert ungroup4(memoryview(grouped)) == data


def test_builder_limits() -> None:
    small = XorbBuilder(max_bytes=10_000)
    assert small.fits(b"a" * 5000)
    small.add(chunk_hash(b"a" * 5000), b"a" * 5000)
    assert not small.fits(b"b" * 5000)
    with pytest.raises(ValueError):
        small.add(chunk_hash(b"b" * 5000), b"b" * 5000)
    capped = XorbBuilder()
    for i in range(MAX_XORB_CHUNKS):
        capped.add(chunk_hash(i.to_bytes(4, "little")), i.to_bytes(4, "little"))
    assert not capped.fits(b"x")
    assert parse_xorb(capped.build().data).footer.num_chunks == MAX_XORB_CHUNKS


def test_chunk_region_offsets_in_footer() -> None:
    pairs, blob = sample_xorb(n=3)
    footer = parse_footer(blob)
    at = 0
    for i, (h, data) in enumerate(iter_chunks(blob[: footer.packed_ends[-1]])):
        at += CHUNK_HEADER_SIZE + h.compressed_size
        assert footer.packed_ends[i] == at
        assert data == pairs[i][1]
