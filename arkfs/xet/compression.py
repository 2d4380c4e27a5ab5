"""Chunk compression schemes of the xorb format (spec: "Compression Schemes")."""

import enum

import lz4.frame

from arkfs.xet._bytegroup import ungroup4
from arkfs.xet.errors import CompressionError

# A decoded chunk: its own bytes, or a view of the stored payload it was (no copy).
ChunkData = bytes | memoryview

# How much of a chunk the ByteGrouping4 trial compresses before committing to the whole chunk.
_BG4_SAMPLE = 16 * 1024


class Compression(enum.IntEnum):
    """Compression Type values of a chunk header."""

    NONE = 0
    LZ4 = 1
    BG4_LZ4 = 2


def byte_group_4(data: bytes) -> bytes:
    """ByteGrouping4LZ4: bytes 0,4,8.. then 1,5,9.. then 2,6,.. then 3,7,.."""
    return data[0::4] + data[1::4] + data[2::4] + data[3::4]


def byte_ungroup_4(grouped: bytes) -> bytes:
    """Inverse of byte_group_4; the first len % 4 groups are one byte longer.

    The plain-Python reference of ungroup4 (_bytegroup.c), which decompress uses.
    """
    n = len(grouped)
    base, extra = divmod(n, 4)
    out = bytearray(n)
    start = 0
    for i in range(4):
        size = base + (1 if i < extra else 0)
        out[i::4] = grouped[start : start + size]
        start += size
    return bytes(out)


def _lz4(data: bytes) -> bytes:
    # One independent 256 KiB block per chunk, the frame settings hf_xet writes.
    out: bytes = lz4.frame.compress(
        data, block_size=lz4.frame.BLOCKSIZE_MAX256KB, block_linked=False, store_size=False
    )
    return out


def compress(data: bytes, scheme: Compression) -> bytes:
    """Compress data with one scheme."""
    if scheme is Compression.NONE:
        return data
    if scheme is Compression.LZ4:
        return _lz4(data)
    return _lz4(byte_group_4(data))


def compress_best(data: bytes) -> tuple[Compression, bytes]:
    """Compression Selection: LZ4, or ByteGrouping4LZ4 where a sample shows it wins, else None."""
    scheme = Compression.LZ4
    if len(data) >= 4 * 1024:
        sample = data[:_BG4_SAMPLE]
        if len(_lz4(byte_group_4(sample))) < len(_lz4(sample)):
            scheme = Compression.BG4_LZ4
    packed = compress(data, scheme)
    if len(packed) >= len(data):
        return Compression.NONE, data
    return scheme, packed


def decompress(payload: bytes | memoryview, scheme: int, size: int) -> ChunkData:
    """Decompress one chunk payload, refusing output that is not exactly size bytes. A
    stored (uncompressed) payload is handed back as it is, not copied: a copy of every
    byte under the GIL was the top GIL holder of a cold read of random data (py-spy)."""
    out: ChunkData
    if scheme == Compression.NONE:
        out = payload
    elif scheme in (Compression.LZ4, Compression.BG4_LZ4):
        out = _lz4_exact(payload, size)
        if scheme == Compression.BG4_LZ4:
            out = ungroup4(out)
    else:
        raise CompressionError(f"unknown compression type {scheme}")
    if len(out) != size:
        raise CompressionError(f"chunk decompressed to {len(out)} bytes, header says {size}")
    return out


def _lz4_exact(payload: bytes | memoryview, size: int) -> bytes:
    """Decode one LZ4 frame into at most size bytes (no decompression bombs)."""
    decoder = lz4.frame.LZ4FrameDecompressor()
    try:
        out: bytes = decoder.decompress(payload, max_length=size)
    except RuntimeError as exc:
        raise CompressionError(f"corrupt LZ4 frame: {exc}") from None
    if not decoder.eof:
        raise CompressionError(f"LZ4 frame does not end within the declared {size} bytes")
    if decoder.unused_data:
        raise CompressionError(f"{len(decoder.unused_data)} bytes after the LZ4 frame")
    return out
