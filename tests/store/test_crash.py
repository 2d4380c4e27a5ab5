"""SIGKILL a writer at random moments, again and again: nothing acknowledged is lost, no damage."""

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from arkfs.store.local import LocalStore
from arkfs.xet.hashing import string_to_hash
from arkfs.xet.xorb import parse_xorb
from tests.store.crash_writer import SHARED

REPO = Path(__file__).resolve().parents[2]
ROUNDS = 8


def run_and_kill(root: Path, seed: int, delay: float, wait_ready: bool) -> list[str]:
    """Start a crash_writer, SIGKILL it delay seconds later; return its complete lines."""
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.store.crash_writer", str(root), str(seed)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdout is not None
    head = child.stdout.readline() if wait_ready else b""
    time.sleep(delay)
    child.send_signal(signal.SIGKILL)
    out, err = child.communicate()
    assert child.returncode == -signal.SIGKILL, err.decode()
    text = (head + out).decode()
    return text.split("\n")[:-1]  # the last piece is incomplete or empty


def test_sigkill_loses_nothing_acknowledged(tmp_path: Path) -> None:
    rng = random.Random(20240607)
    root = tmp_path / "store"
    acked: dict[str, list[str]] = {"xorb": [], "file": [], "ark": []}
    for i in range(ROUNDS):
        first = i == 0  # may die while the store is being created
        lines = run_and_kill(
            root, i, rng.uniform(0.0, 0.3) if first else rng.uniform(0.05, 0.6), not first
        )
        for line in lines:
            kind, _, value = line.partition(" ")
            if kind != "ready":
                acked[kind].append(value)
    assert len(acked["file"]) > ROUNDS  # the kills did land among the writes

    with LocalStore.open(root, create=False) as store:
        assert store.check() == []
        for name in acked["xorb"]:
            h = string_to_hash(name)
            parse_xorb(store.read_xorb(h, 0, store.xorb_size(h)), expected_hash=h)
        for name in acked["file"]:
            assert store.has_file(string_to_hash(name))
        for line in acked["ark"]:  # each acknowledged version holds what was bound
            ark, version, name = line.split()
            assert store.get_binding(ark, int(version)).manifest == string_to_hash(name)
        shared = [v.version for v in store.list_versions(SHARED)]  # appended to by every run
        assert shared == list(range(1, len(shared) + 1))
