"""Hash throughput: arkfs's chunk+hash against hf_xet.hash_files on the same file."""

from pathlib import Path

import hf_xet

from arkfs.xet.digest import digest_stream
from arkfs.xet.hashing import hash_to_string
from benchmarks.common import MIB, Figure, median_seconds, random_file

SIZE = 512 * MIB


def bench_hash(workdir: Path) -> Figure:
    """Median MB/s of both hashers over a warm 512 MiB random file."""
    path = random_file(workdir / "random-512MiB", SIZE, seed=512)

    def ours() -> None:
        with path.open("rb") as f:
            digest_stream(f, sha256=False)

    def theirs() -> None:
        hf_xet.hash_files([str(path)])

    with path.open("rb") as f:  # also warms the page cache
        ours_hash = hash_to_string(digest_stream(f, sha256=False).file_hash)
    if hf_xet.hash_files([str(path)])[0].hash != ours_hash:
        raise SystemExit("arkfs and hf_xet disagree on the file hash: the benchmark is void")
    mbps = SIZE / 1e6
    return Figure(
        "hash (chunk + hash), warm file",
        "MB/s",
        mbps / median_seconds(ours),
        mbps / median_seconds(theirs),
        "hf_xet.hash_files",
        ">= 0.5",
    )
