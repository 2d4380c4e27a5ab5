"""`arkfs store check` as a user runs it."""

import random
from pathlib import Path

from arkfs.store.local import LocalStore
from arkfs.xet.hashing import chunk_hash, hash_to_string
from arkfs.xet.xorb import serialize_xorb
from tests.support.cli import run_arkfs


def test_check_reports_a_flipped_byte(tmp_path: Path) -> None:
    data = random.Random(1).randbytes(30_000)
    xorb = serialize_xorb([(chunk_hash(data), data)])
    with LocalStore.open(tmp_path / "s") as store:
        store.put_xorb(xorb.hash, xorb.data)
    ok = run_arkfs("store", "check", str(tmp_path / "s"))
    assert ok.returncode == 0 and "no damage found" in ok.stdout
    name = hash_to_string(xorb.hash)
    path = next((tmp_path / "s").rglob(name))
    raw = bytearray(path.read_bytes())
    raw[100] ^= 1
    path.write_bytes(bytes(raw))
    bad = run_arkfs("store", "check", str(tmp_path / "s"))
    assert bad.returncode == 1
    assert any(name in line for line in bad.stdout.splitlines()[:-1])


def test_check_refuses_a_non_store(tmp_path: Path) -> None:
    out = run_arkfs("store", "check", str(tmp_path))
    assert out.returncode == 2
    assert out.stderr.strip().endswith("is not an arkfs store (no index.sqlite)")
