"""Direct writes: the bytes land right through O_DIRECT, its aligned part only, and through
the ordinary descriptor where it is refused; gather copies parts in order."""

import contextlib
import errno
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from arkfs.util import direct
from arkfs.util._gather import gather
from arkfs.util.direct import ALIGN, MIN_DIRECT, DirectFile

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`

MIB = 1024 * 1024


def _parts(total: int) -> list[bytes | memoryview]:
    """total bytes as parts of awkward sizes, a view among them."""
    parts: list[bytes | memoryview] = [os.urandom(700), b"", memoryview(os.urandom(9000))[17:]]
    left = total - sum(map(len, parts))
    parts += [os.urandom(min(65536, left - k)) for k in range(0, left, 65536)]
    return parts


@pytest.fixture
def direct_file(tmp_path: Path) -> Iterator[DirectFile]:
    """tmp_path/out opened with its direct descriptor (where the file system allows)."""
    file = DirectFile(tmp_path / "out", 4 * MIB)
    try:
        if file.direct is None:
            pytest.skip(f"the file system of {tmp_path} refuses O_DIRECT")
        yield file
    finally:
        file.close()


def test_gather_copies_the_parts_in_order_and_refuses_what_does_not_fit() -> None:
    dest = bytearray(12)
    assert gather(dest, [b"abc", memoryview(b"xyzw")[1:3], bytearray(b"!"), b""]) == 6
    assert dest == b"abcyz!" + bytes(6)
    with pytest.raises(ValueError, match="13 bytes do not fit in 12"):
        gather(dest, [bytes(13)])
    with pytest.raises(TypeError):
        gather(dest, [b"a", 3])  # type: ignore[list-item]


def test_a_piece_goes_direct_a_window_at_a_time_but_for_its_unaligned_tail(
    direct_file: DirectFile, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    file, out = direct_file, tmp_path / "out"
    direct_fd, written = file.direct, []
    pwrite = os.pwrite

    def noted(fd: int, data: memoryview, at: int) -> int:
        written.append((fd, at, len(data)))
        return pwrite(fd, data, at)

    monkeypatch.setattr(os, "pwrite", noted)
    monkeypatch.setattr(direct, "WINDOW", 2 * MIB)
    monkeypatch.setattr(direct, "_spare", [])
    parts = _parts(3 * MIB + 1234)
    assert file.pwrite_parts(parts, 2 * MIB) == 3 * MIB + 1234
    assert file.pwrite_parts([b"small"], 0) == 5  # too small to be worth a copy
    # the 1234-byte tail: pwritev; no buffer bigger than a window
    assert written == [(direct_fd, 2 * MIB, 2 * MIB), (direct_fd, 4 * MIB, MIB)]
    assert max(len(b) for b in direct._spare) == 2 * MIB
    data = out.read_bytes()
    assert data[: 2 * MIB] == b"small" + bytes(2 * MIB - 5)
    assert data[2 * MIB :] == b"".join(parts)


def test_a_refused_direct_write_goes_through_the_ordinary_descriptor(
    direct_file: DirectFile, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    file, out = direct_file, tmp_path / "out"
    direct_fd = file.direct

    def refused(fd: int, data: memoryview, at: int) -> int:
        assert fd == direct_fd
        raise OSError(errno.EINVAL, "Invalid argument")

    monkeypatch.setattr(os, "pwrite", refused)
    parts = _parts(MIB + 3)
    assert file.pwrite_parts(parts, ALIGN) == MIB + 3
    assert file.direct is None  # and it stays closed for the later pieces
    assert file.pwrite_parts(parts, 2 * MIB) == MIB + 3
    data = out.read_bytes()
    assert data[ALIGN : ALIGN + MIB + 3] == b"".join(parts) == data[2 * MIB :]


def test_windows_cut_the_parts_in_order_into_equal_spans() -> None:
    parts: list[bytes | memoryview] = [b"abc", b"", memoryview(b"defgh")[1:], b"ijklmnop", b"q"]
    windows = [[bytes(v) for v in w] for w in direct._windows(parts, 4)]
    assert windows == [[b"abc", b"e"], [b"fgh", b"i"], [b"jklm"], [b"nop", b"q"]]
    assert [bytes(v) for w in direct._windows(parts, 100) for v in w] == [
        b"abc", b"efgh", b"ijklmnop", b"q"
    ]  # fmt: skip


def test_an_unaligned_offset_is_written_through_the_ordinary_descriptor(tmp_path: Path) -> None:
    out = tmp_path / "out"
    file = DirectFile(out, 4 * MIB)
    parts = _parts(MIB)
    try:
        assert file.pwrite_parts(parts, 10) == MIB
    finally:
        file.close()
    assert out.read_bytes() == bytes(10) + b"".join(parts)


def test_pwrite_all_writes_every_part_whatever_pwritev_takes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Short writes and at most IOV_MAX buffers per pwritev: the parts still land whole."""
    calls: list[int] = []
    pwritev = os.pwritev

    def short(fd: int, buffers: list[memoryview], at: int) -> int:
        calls.append(len(buffers))
        return pwritev(fd, [bytes(b"".join(buffers)[:1000])], at)

    monkeypatch.setattr(os, "pwritev", short)
    monkeypatch.setattr(direct, "IOV_MAX", 3)
    parts: list[bytes | memoryview] = [os.urandom(n) for n in (700, 0, 2500, 1, 64 * 1024)]
    parts.append(memoryview(os.urandom(5000))[17:4000])
    fd = os.open(tmp_path / "out", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        direct.pwrite_all(fd, parts, 10)
    finally:
        os.close(fd)
    assert (tmp_path / "out").read_bytes() == bytes(10) + b"".join(parts)
    assert max(calls) == 3 and len(calls) == -(-sum(map(len, parts)) // 1000)


def test_buffers_are_reused_and_few_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(direct, "_spare", [])
    with direct._aligned(5 * ALIGN) as first:
        assert len(first) == 5 * ALIGN
    with direct._aligned(3 * ALIGN + 1) as again:  # the spare one fits
        assert len(again) == 3 * ALIGN + 1
    assert len(direct._spare) == 1
    with direct._aligned(8 * ALIGN):  # the spare one is too small: a new one
        assert len(direct._spare) == 1
    assert len(direct._spare) == 2
    with contextlib.ExitStack() as stack:
        for _ in range(direct.SPARE_BUFFERS + 3):
            stack.enter_context(direct._aligned(ALIGN))
    assert len(direct._spare) == direct.SPARE_BUFFERS


def test_a_file_system_that_refuses_o_direct_gets_every_byte_through_the_ordinary_descriptor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_open = os.open

    def no_direct(path: Path, flags: int, mode: int = 0o777) -> int:
        if flags & os.O_DIRECT:
            raise OSError(errno.EOPNOTSUPP, "Operation not supported")
        return real_open(path, flags, mode)

    monkeypatch.setattr(os, "open", no_direct)
    out = tmp_path / "out"
    file = DirectFile(out, 4 * MIB)
    assert file.direct is None
    parts = _parts(MIB + 5)
    try:
        assert file.pwrite_parts(parts, 0) == MIB + 5
    finally:
        file.close()
    assert out.read_bytes() == b"".join(parts)


def test_a_file_too_small_for_a_direct_write_gets_no_direct_descriptor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    flags: list[int] = []
    real_open = os.open

    def noted(path: Path, flag: int, mode: int = 0o777) -> int:
        flags.append(flag)
        return real_open(path, flag, mode)

    monkeypatch.setattr(os, "open", noted)
    file = DirectFile(tmp_path / "small", MIN_DIRECT - 1)
    try:
        assert file.direct is None and len(flags) == 1  # no second, direct, open tried
        assert file.pwrite_parts([b"abc"], 0) == 3
    finally:
        file.close()
    assert (tmp_path / "small").read_bytes() == b"abc"


def test_a_descriptor_given_is_written_through_and_left_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """write_atomic hands over its temp file's descriptor: a small file opens nothing more."""
    out = tmp_path / "given"
    fd = os.open(out, os.O_RDWR | os.O_CREAT, 0o600)
    opened: list[int] = []
    real_open = os.open

    def noted(path: Path, flag: int, mode: int = 0o777) -> int:
        opened.append(flag)
        return real_open(path, flag, mode)

    monkeypatch.setattr(os, "open", noted)
    try:
        file = DirectFile(out, MIN_DIRECT - 1, fd=fd)
        assert file.fd == fd and file.direct is None and opened == []
        assert file.pwrite_parts([b"abc"], 0) == 3
        file.close()
        assert os.pread(fd, 3, 0) == b"abc"  # still open: its owner closes it
    finally:
        os.close(fd)
