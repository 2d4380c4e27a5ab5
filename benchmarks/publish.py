"""Ingest: `arkfs publish` against hf_xet uploading the same tree to the same `arkfs serve`."""

import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import (
    ARKFS,
    INGEST,
    MEMORY,
    MIB,
    QUICK,
    REPEAT,
    Figure,
    arkfs_server,
    random_file,
    store_cas_bytes,
)

TOKEN = "bench-write"
BIG, BIG_SIZE = 4, (8 if QUICK else 96) * MIB
SMALL = 20 if QUICK else 200  # files of 16 KiB to 1 MiB
CHANGED = 0.01  # share of the bytes changed before the re-publish

HF_UPLOAD = """
import os, sys, time, hf_xet
paths, endpoint = sys.argv[2:], sys.argv[1]
expiry = int(time.time()) + 3600
s = hf_xet.XetSession()
token = os.environ["ARKFS_TOKEN"]
with s.new_upload_commit(endpoint=endpoint, token=token, token_expiry_unix_secs=expiry) as c:
    ups = [c.start_upload_file(p) for p in paths]
[u.result() for u in ups]
"""


def make_tree(root: Path) -> list[Path]:
    """The fixed-seed tree: a few large random files and many small ones."""
    files = [random_file(root / f"big-{i}.bin", BIG_SIZE, seed=100 + i) for i in range(BIG)]
    rng = random.Random(7)
    for i in range(SMALL):
        path = root / f"small/{i % 10}/f{i}.bin"
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            path.write_bytes(rng.randbytes(rng.randint(16 * 1024, MIB)))
        files.append(path)
    return files


def change_one_percent(files: list[Path], seed: int) -> None:
    """Overwrite scattered 16 KiB blocks totalling 1% of the tree's bytes."""
    rng = random.Random(seed)
    total = sum(p.stat().st_size for p in files)
    sizes = [p.stat().st_size for p in files]
    for _ in range(int(total * CHANGED) // (16 * 1024)):
        path = rng.choices(files, weights=sizes)[0]
        size = path.stat().st_size
        with path.open("r+b") as f:
            f.seek(rng.randrange(max(size - 16 * 1024, 1)))
            f.write(rng.randbytes(16 * 1024))


def _publish(url: str, tree: Path, home: Path) -> None:
    env = os.environ | {"ARKFS_TOKEN": TOKEN, "HF_HOME": str(home)}
    subprocess.run(
        [ARKFS, "publish", str(tree), "--ark", "ark:99999/bench", "--server", url],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )


def _hf_upload(url: str, files: list[Path], home: Path) -> None:
    env = os.environ | {
        "HF_HOME": str(home),
        "HF_XET_TELEMETRY_ENABLED": "false",
        "ARKFS_TOKEN": TOKEN,
    }
    subprocess.run([sys.executable, "-c", HF_UPLOAD, url, *map(str, files)], env=env, check=True)


def bench_publish(workdir: Path) -> list[Figure]:
    """Median MB/s of 3 fresh uploads each, the bytes each uploads after a 1% change, and
    the server's peak memory while each uploads."""
    tree = workdir / "publish-tree"
    tree.mkdir(exist_ok=True)
    files = make_tree(tree)
    total = sum(p.stat().st_size for p in files)
    rates: dict[str, list[float]] = {"arkfs": [], "hf_xet": []}
    changed: dict[str, int] = {}
    server_rss = {"arkfs": 0, "hf_xet": 0}
    for attempt in range(REPEAT):
        for who in ("arkfs", "hf_xet"):
            with tempfile.TemporaryDirectory(prefix="arkfs-bench-") as tmp:
                store, home, tokens = Path(tmp) / "store", Path(tmp) / "home", Path(tmp) / "t"
                tokens.write_text(f"{TOKEN} write\n")
                with arkfs_server(store, tokens) as server:
                    url = server.url
                    upload = _publish if who == "arkfs" else _hf_upload
                    source = tree if who == "arkfs" else list(files)
                    start = time.perf_counter()
                    upload(url, source, home)  # type: ignore[arg-type]
                    rates[who].append(total / 1e6 / (time.perf_counter() - start))
                    if attempt == 0:
                        before = store_cas_bytes(store)
                        change_one_percent(files, seed=1)
                        upload(url, source, home)  # type: ignore[arg-type]
                        changed[who] = store_cas_bytes(store) - before
                        for p in files:
                            p.unlink()
                        files = make_tree(tree)
                    server_rss[who] = max(server_rss[who], server.peak_rss())
    return [
        Figure(
            "ingest: publish vs hf_xet upload",
            "MB/s",
            statistics.median(rates["arkfs"]),
            statistics.median(rates["hf_xet"]),
            "hf_xet upload, same server",
            ">= 1.0",
            INGEST,
        ),
        Figure(
            "re-publish after 1% change (xorbs and shards)",
            "MB uploaded",
            changed["arkfs"] / 1e6,
            changed["hf_xet"] / 1e6,
            "hf_xet re-upload",
            "<= 1.0",
            INGEST,
        ),
        Figure(
            "server peak RSS while receiving (max of runs)",
            "MiB",
            server_rss["arkfs"] / MIB,
            server_rss["hf_xet"] / MIB,
            "same server, hf_xet uploading",
            None,
            MEMORY,
        ),
    ]
