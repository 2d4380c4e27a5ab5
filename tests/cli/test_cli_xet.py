"""`arkfs xet hash` as a user runs it: the real console script in a subprocess."""

from pathlib import Path

import hf_xet

from arkfs.xet.chunking import chunk_stream
from arkfs.xet.hashing import chunk_hash, hash_to_string
from tests.support.cli import run_arkfs

arkfs = run_arkfs


def test_hash_lines_match_hf_xet(tmp_path: Path) -> None:
    a, b = tmp_path / "a file", tmp_path / "b"
    a.write_bytes(b"Hello World!" * 100_000)
    b.write_bytes(b"")
    out = arkfs("xet", "hash", str(a), str(b))
    assert out.returncode == 0, out.stderr
    ref = hf_xet.hash_files([str(a), str(b)])
    assert out.stdout.splitlines() == [
        f"{ref[0].hash}  1200000  {a}",
        f"{ref[1].hash}  0  {b}",
    ]


def test_chunks_listing(tmp_path: Path) -> None:
    data = bytes(range(256)) * 2000
    f = tmp_path / "f"
    f.write_bytes(data)
    lines = arkfs("xet", "hash", "--chunks", str(f)).stdout.splitlines()
    chunks = list(chunk_stream([data]))
    assert len(lines) == 1 + len(chunks)
    offset = 0
    for line, chunk in zip(lines[1:], chunks, strict=True):
        assert line.split() == [str(offset), str(len(chunk)), hash_to_string(chunk_hash(chunk))]
        offset += len(chunk)


def test_unreadable_file_reported_others_hashed(tmp_path: Path) -> None:
    good = tmp_path / "good"
    good.write_bytes(b"x")
    out = arkfs("xet", "hash", str(tmp_path / "missing"), str(good))
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "missing" in out.stderr
    assert out.stdout.endswith(f"  1  {good}\n")


def test_stdin(tmp_path: Path) -> None:
    out = arkfs("xet", "hash", "-", input=b"abc")
    assert out.stdout == f"{hf_xet_hash(tmp_path, b'abc')}  3  -\n"


def hf_xet_hash(tmp_path: Path, data: bytes) -> str:
    p = tmp_path / "ref"
    p.write_bytes(data)
    return hf_xet.hash_files([str(p)])[0].hash


def test_usage_errors_exit_2() -> None:
    assert arkfs("xet", "hash").returncode == 2
    assert arkfs("nonsense").returncode == 2
    helptext = arkfs("xet", "hash", "--help").stdout
    assert "sha256sum" in helptext
