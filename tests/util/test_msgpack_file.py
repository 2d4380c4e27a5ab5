"""read_map gives what msgpack.unpackb gives of a map, binary values as FileSlices of the
file, and refuses bytes that are not exactly one map."""

import io

import msgpack
import pytest

from arkfs.archive.manifest import Entry, Kind, Manifest, build
from arkfs.util.msgpack_file import PIECE, FileSlice, bin_header, pieces, read_map

pytestmark = pytest.mark.unit

DOCUMENTS = [
    {},
    {"a": 1, "b": None, "c": "text", "d": [1, [2, b"x"]], "e": 1.5},
    {"small": b"", "short": b"x" * 200, "medium": b"y" * 70_000, 7: {"nested": b"z"}},
    {f"k{i}": i for i in range(20)},  # map 16
]


@pytest.mark.parametrize("document", DOCUMENTS)
def test_a_map_reads_as_unpackb_reads_it(document: dict[object, object]) -> None:
    data = msgpack.packb(document, use_bin_type=True)
    file = io.BytesIO(b"before" + data + b"after")
    found = read_map(file, 6, len(data))
    loaded = {k: v.read() if isinstance(v, FileSlice) else v for k, v in found.items()}
    assert loaded == msgpack.unpackb(data, raw=False, strict_map_key=False)
    assert all(isinstance(found[k], FileSlice) for k, v in document.items() if type(v) is bytes)


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (msgpack.packb([1, 2]), "not a msgpack map"),
        (msgpack.packb({"a": b"x" * 100})[:-1], "past the end"),
        (msgpack.packb({"a": "text"})[:-1], "truncated"),
        (msgpack.packb({"a": 1}) + b"\x00", "extra data"),
        (b"", "truncated"),
    ],
)
def test_what_is_not_one_map_is_refused(data: bytes, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        read_map(io.BytesIO(data), 0, len(data))


def test_pieces_of_bytes_and_of_a_file_slice_are_the_bytes() -> None:
    data = bytes(range(256)) * (PIECE // 100)
    file = io.BytesIO(b"??" + data)
    for source in (data, FileSlice(file, 2, len(data))):
        parts = list(pieces(source))
        assert b"".join(parts) == data and max(map(len, parts)) == PIECE


def test_a_manifest_reads_from_a_file_as_from_its_bytes() -> None:
    entries = [
        Entry("d", Kind.DIR, 0, 0o755, 1),
        Entry("d/f", Kind.FILE, 3, 0o644, -5, bytes(range(32)), bytes(32)),
        Entry("d/l", Kind.SYMLINK, 1, 0o777, 2, target="f"),
    ]
    manifest = build("ark:12345/x6file", entries, created=2.0)
    data = manifest.to_msgpack()
    file = io.BytesIO(b"\x00" * 9 + data)
    assert Manifest.from_msgpack_file(FileSlice(file, 9, len(data))) == manifest


@pytest.mark.parametrize("size", [0, 1, 255, 256, 65_535, 65_536, 1 << 20])
def test_bin_header_is_msgpack_s_own(size: int) -> None:
    value = b"v" * size
    assert bin_header(size) + value == msgpack.packb(value, use_bin_type=True)
