"""Crash safety: SIGKILL `arkfs serve` in the middle of uploads, again and again."""

import hashlib
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import httpx

from tests.support.cli import ARKFS, run_arkfs
from tests.support.server import arkfs_server

ROUNDS = 6


def make_tree(root: Path, seed: int) -> dict[str, bytes]:
    rng = random.Random(seed)
    files = {f"f{i}.bin": rng.randbytes(rng.randint(1, 6 * 1024 * 1024)) for i in range(5)}
    root.mkdir(parents=True)
    for name, data in files.items():
        (root / name).write_bytes(data)
    return files


def publish(url: str, tree: Path, ark: str, seed: int | None = None) -> subprocess.Popen[bytes]:
    """Start `arkfs publish` of tree (made from seed first, if given)."""
    if seed is not None:
        make_tree(tree, seed)
    return subprocess.Popen(
        [ARKFS, "publish", str(tree), "--ark", ark, "--server", url],
        env=os.environ | {"ARKFS_TOKEN": "w"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def test_sigkill_mid_upload_loses_nothing_acknowledged(tmp_path: Path) -> None:
    store = tmp_path / "store"
    tokens = tmp_path / "tokens"
    tokens.write_text("w write\n")
    rng = random.Random(9)
    acknowledged: dict[str, dict[str, bytes]] = {}
    for round_ in range(ROUNDS):
        with arkfs_server(store, "--tokens", str(tokens), "--open-read") as (url, server):
            # One publish runs to completion: acknowledged, so it must survive every crash.
            done = tmp_path / f"done{round_}"
            acknowledged[f"ark:12345/done{round_}"] = make_tree(done, 100 + round_)
            out = publish(url, done, f"ark:12345/done{round_}")
            assert out.wait(timeout=120) == 0
            # Another is cut off by SIGKILL at a random moment of its upload.
            cut = publish(url, tmp_path / f"cut{round_}", f"ark:12345/cut{round_}", round_)
            time.sleep(rng.uniform(0.05, 1.0))
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
            if cut.poll() is None:
                os.killpg(cut.pid, signal.SIGKILL)
            cut.wait()
    check = run_arkfs("store", "check", str(store))
    assert check.returncode == 0, check.stdout + check.stderr
    assert "no damage" in check.stdout
    with arkfs_server(store, "--tokens", str(tokens), "--open-read") as (url, _):
        for ark, files in acknowledged.items():
            for name, data in files.items():
                got = httpx.get(f"{url}/{ark}/f{name[1:].replace('.', '%2E')}", timeout=60)
                assert got.status_code == 200, (ark, name)
                assert hashlib.sha256(got.content).digest() == hashlib.sha256(data).digest()
