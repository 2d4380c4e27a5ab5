"""A msgpack map read from a file, its binary values located rather than loaded.

A bind request carries a manifest of about 110 MB per 1,000,000 files. Parsed from bytes,
the request, the manifest inside it and the manifest's columns are three copies at once;
read from a file, each binary value is read (FileSlice.read) only when wanted, straight
into the one object that keeps it, or copied to the store in pieces without being held.
"""

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

import msgpack

PIECE = 1 << 20  # bytes FileSlice.pieces reads at a time
_BIN = {0xC4: ">B", 0xC5: ">H", 0xC6: ">I"}  # bin 8, 16, 32: the struct of their length
_MAP = {0xDE: ">H", 0xDF: ">I"}  # map 16, 32 (fixmap is 0x80 to 0x8f)


@dataclass(frozen=True)
class FileSlice:
    """Bytes [start, start + size) of an open binary file, read only when asked for."""

    file: BinaryIO
    start: int
    size: int

    def __len__(self) -> int:
        return self.size

    def read(self) -> bytes:
        """The bytes, in one object; ValueError if the file ends before them."""
        self.file.seek(self.start)
        data = self.file.read(self.size)
        if len(data) != self.size:
            raise ValueError(f"the file ends {self.size - len(data)} bytes short of a value")
        return data

    def pieces(self) -> Iterator[bytes]:
        """The bytes in pieces of up to PIECE bytes, in order."""
        for at in range(self.start, self.start + self.size, PIECE):
            self.file.seek(at)
            piece = self.file.read(min(PIECE, self.start + self.size - at))
            if not piece:
                raise ValueError("the file ends short of a value")
            yield piece


def pieces(data: "bytes | FileSlice") -> Iterator[bytes | memoryview]:
    """bytes or a FileSlice in pieces of up to PIECE bytes, none of them copied whole."""
    if isinstance(data, FileSlice):
        yield from data.pieces()
        return
    view = memoryview(data)
    for at in range(0, len(view), PIECE):
        yield view[at : at + PIECE]


def whole(data: "bytes | FileSlice") -> bytes:
    """bytes or a FileSlice as bytes."""
    return data.read() if isinstance(data, FileSlice) else data


def bin_header(size: int) -> bytes:
    """The msgpack header of a binary value of size bytes (its bytes follow it)."""
    for code, fmt in _BIN.items():
        if size < 1 << (8 * struct.calcsize(fmt)):
            return bytes([code]) + struct.pack(fmt, size)
    raise ValueError(f"{size} bytes is more than a msgpack binary value holds")


def read_map(file: BinaryIO, start: int, size: int) -> dict[object, object]:
    """The msgpack map that is bytes [start, start + size) of file: its binary values as
    FileSlices, every other value (and every key) as msgpack.unpackb(raw=False,
    strict_map_key=False) gives it. ValueError if those bytes are not exactly one map."""
    end = start + size
    count, at = _header(file, start, end)
    out: dict[object, object] = {}
    for _ in range(count):
        key, at = _value(file, at, end, size)
        first = _peek(file, at, end)
        if first in _BIN:
            length_size = struct.calcsize(_BIN[first])
            (length,) = struct.unpack(_BIN[first], _exactly(file, at + 1, length_size, end))
            value: object = FileSlice(file, at + 1 + length_size, length)
            at += 1 + length_size + length
            if at > end:
                raise ValueError("a binary value runs past the end of the map")
        else:
            value, at = _value(file, at, end, size)
        out[key] = value
    if at != end:
        raise ValueError(f"{end - at} bytes of extra data after the map")
    return out


def _header(file: BinaryIO, at: int, end: int) -> tuple[int, int]:
    """(entries, where the first key starts) of the map header at at."""
    first = _peek(file, at, end)
    if 0x80 <= first <= 0x8F:
        return first & 0x0F, at + 1
    if first not in _MAP:
        raise ValueError("not a msgpack map")
    length_size = struct.calcsize(_MAP[first])
    (count,) = struct.unpack(_MAP[first], _exactly(file, at + 1, length_size, end))
    return count, at + 1 + length_size


def _peek(file: BinaryIO, at: int, end: int) -> int:
    return _exactly(file, at, 1, end)[0]


def _exactly(file: BinaryIO, at: int, n: int, end: int) -> bytes:
    """n bytes at at, all before end; ValueError otherwise."""
    file.seek(at)
    data = file.read(n) if at + n <= end else b""
    if len(data) != n:
        raise ValueError("the map is truncated")
    return data


def _value(file: BinaryIO, at: int, end: int, limit: int) -> tuple[object, int]:
    """The msgpack value at at, decoded, and where the next one starts."""
    file.seek(at)
    unpacker = msgpack.Unpacker(
        _Window(file, end - at), raw=False, strict_map_key=False, max_buffer_size=max(limit, 1)
    )
    try:
        value = unpacker.unpack()
    except msgpack.OutOfData:
        raise ValueError("the map is truncated") from None
    except (msgpack.UnpackException, ValueError) as exc:
        raise ValueError(str(exc)) from None
    return value, at + unpacker.tell()


class _Window:
    """A file read from where it is for at most left bytes (what an Unpacker reads ahead)."""

    def __init__(self, file: BinaryIO, left: int) -> None:
        self._file = file
        self._left = left

    def read(self, n: int) -> bytes:
        data = self._file.read(min(n, self._left))
        self._left -= len(data)
        return data
