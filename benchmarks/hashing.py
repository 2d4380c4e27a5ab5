"""Hash throughput: arkfs's chunk+hash against hf_xet.hash_files on the same file."""

from pathlib import Path

import hf_xet

from arkfs.xet.digest import digest_stream
from arkfs.xet.hashing import hash_to_string
from benchmarks.common import INGEST, Figure, median_seconds


def bench_hash(path: Path) -> list[Figure]:
    """Median MB/s of both hashers over a warm random file (the 1 GiB corpus)."""

    def ours() -> None:
        with path.open("rb") as f:
            digest_stream(f, sha256=False)

    def theirs() -> None:
        hf_xet.hash_files([str(path)])

    with path.open("rb") as f:  # also warms the page cache
        ours_hash = hash_to_string(digest_stream(f, sha256=False).file_hash)
    if hf_xet.hash_files([str(path)])[0].hash != ours_hash:
        raise RuntimeError("arkfs and hf_xet disagree on the file hash: the benchmark is void")
    mbps = path.stat().st_size / 1e6
    return [
        Figure(
            "hash (chunk + hash), warm file",
            "MB/s",
            mbps / median_seconds(ours),
            mbps / median_seconds(theirs),
            "hf_xet.hash_files",
            ">= 1.0",
            INGEST,
        )
    ]
