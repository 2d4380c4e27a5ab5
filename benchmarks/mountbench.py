"""Reads through the mount: sequential (cold, warm, hot), first-byte latency, read
amplification and the daemon's memory, each against a reference on the same bytes.

Every mount is fresh (`arkfs mount` in a subprocess). Cold: an empty chunk cache and a
dropped page cache. Warm: a full chunk cache and a dropped page cache. Hot: the page
cache holds the file. References: hf_xet and curl against the same server, a trivial
pyfuse3 filesystem serving the file from memory, and the local file.
"""

import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import hf_xet

from arkfs.ark.filenames import filename_to_qualifier
from benchmarks.common import (
    ARKFS,
    LATENCY,
    MEMORY,
    MIB,
    QUICK,
    SEQUENTIAL,
    Figure,
    Mount,
    Server,
    arkfs_mount,
    arkfs_server,
    compare,
    disk_written,
    drop_caches,
    interleaved,
    is_mounted,
    read_seconds,
    shielded,
    size_label,
    stop,
    value,
)
from benchmarks.corpora import Corpora

NAAN = "99999"
BIG_ARK, TREE_ARK = f"ark:{NAAN}/big", f"ark:{NAAN}/tree"
WRITE_TOKEN, READ_TOKEN = "bench-write", "bench-read"
HERE = Path(__file__).resolve().parent
RANDOM_READS = {4096: 64 if QUICK else 512, MIB: 8 if QUICK else 64}  # block: reads per run
WARM_CACHE = "warm-cache"  # the chunk cache the cold reads of the random file leave full
RSS_TARGET = "<= 256"  # MiB, while reading a 1 GiB file
AMPLIFICATION = "bytes fetched / read"


@dataclass(frozen=True)
class Archive:
    """The corpora published on a running `arkfs serve`, and room for mounts' caches."""

    server: Server
    corpora: Corpora
    scratch: Path
    hashes: dict[Path, str]  # the XET hash of each big file

    def mount(self, cache: str, fresh: bool = True, *extra: str) -> AbstractContextManager[Mount]:
        """A new mount of the server (with `arkfs mount` options extra) whose chunk cache is
        scratch/cache (emptied if fresh)."""
        if fresh:
            shutil.rmtree(self.scratch / cache, ignore_errors=True)
        return arkfs_mount(self.server.url, READ_TOKEN, self.scratch / cache, *extra)

    def in_mount(self, mount: Mount, local: Path) -> Path:
        """Where a file or directory of the corpora is in the mount."""
        if local.is_relative_to(self.corpora.tree):
            return mount.path / TREE_ARK / local.relative_to(self.corpora.tree)
        return mount.path / BIG_ARK / local.relative_to(self.corpora.big)

    def ark_url(self, local: Path) -> str:
        """The plain HTTP URL of a big file's ARK."""
        return f"{self.server.url}/{BIG_ARK}/{filename_to_qualifier(local.name)}"

    def fetched(self, mount: Mount) -> int:
        """Bytes fetched from the server so far: the xorb data and footers the server says
        it served (GET /v1/stats) if it counts them, else the mount's bytes_fetched."""
        stats = self.server.stats(READ_TOKEN)
        if stats is not None and "xorb_bytes_served" in stats:
            return stats["xorb_bytes_served"] + stats.get("footer_bytes_served", 0)
        return mount.stats()["bytes_fetched"]

    def fetched_source(self) -> str:
        """Which counter fetched() reads, for the report."""
        stats = self.server.stats(READ_TOKEN)
        if stats is not None and "xorb_bytes_served" in stats:
            return "server GET /v1/stats: xorb and footer bytes served"
        return "mount bytes_fetched: xorb data, footers not counted"


@contextmanager
def published(workdir: Path, corpora: Corpora) -> Iterator[Archive]:
    """A server on a new store under workdir, holding the big files and the tree."""
    scratch = Path(tempfile.mkdtemp(prefix="session-", dir=workdir))
    try:
        tokens = scratch / "tokens"
        tokens.write_text(f"{WRITE_TOKEN} write\n{READ_TOKEN} read\n")
        with arkfs_server(scratch / "store", tokens) as server:
            for directory, ark in ((corpora.big, BIG_ARK), (corpora.tree, TREE_ARK)):
                started = time.perf_counter()
                subprocess.run(
                    [ARKFS, "publish", str(directory), "--ark", ark, "--server", server.url],
                    env=os.environ | {"ARKFS_TOKEN": WRITE_TOKEN},
                    check=True,
                    stdout=subprocess.DEVNULL,
                )
                print(f"  published {ark} in {time.perf_counter() - started:.0f} s", flush=True)
            big = [corpora.random, corpora.floats]
            infos = hf_xet.hash_files([str(p) for p in big])
            yield Archive(
                server, corpora, scratch, {p: i.hash for p, i in zip(big, infos, strict=True)}
            )
    finally:
        with shielded():
            shutil.rmtree(scratch, ignore_errors=True)


@contextmanager
def trivial_mount(source: Path) -> Iterator[Path]:
    """Serve source (a file, or a tree) through a trivialfs.py process; yields the file's
    path in it, or the tree's."""
    mountpoint = Path(tempfile.mkdtemp(prefix="trivialfs-"))
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "trivialfs.py"), str(source), str(mountpoint)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        if proc.stdout.readline().strip() != "ready":  # type: ignore[union-attr]
            raise RuntimeError("trivialfs did not start")
        yield mountpoint if source.is_dir() else mountpoint / "data"
    finally:
        with shielded():
            subprocess.run(["fusermount3", "-u", str(mountpoint)], capture_output=True)
            stop(proc)  # if it had not mounted yet, SIGTERM makes it unmount
            if is_mounted(mountpoint):
                subprocess.run(["fusermount3", "-uz", str(mountpoint)], capture_output=True)
            with suppress(OSError):
                mountpoint.rmdir()


def _hf_xet(archive: Archive, mode: str, local: Path, arg: str = "", whole: bool = False) -> float:
    """Seconds hf_xet took for one mode of hfxet_read.py, in a new process: as it timed
    itself after its import, or, if whole, the whole process (start-up and import too)."""
    with tempfile.TemporaryDirectory(prefix="hf-home-", dir=archive.scratch) as home:
        started = time.perf_counter()
        out = subprocess.run(
            [sys.executable, str(HERE / "hfxet_read.py"), mode, archive.server.url, READ_TOKEN]
            + [archive.hashes[local], str(local.stat().st_size)]
            + ([arg] if arg else []),
            env=os.environ | {"HF_HOME": home, "HF_XET_TELEMETRY_ENABLED": "false"},
            capture_output=True,
            text=True,
            check=True,
            timeout=600,
        )
        took = time.perf_counter() - started
    return took if whole else float(out.stdout)


def _hf_xet_file(
    archive: Archive, local: Path, whole: bool = False, durable: bool = False
) -> float:
    """Seconds hf_xet took to download local's published copy to a file (whole: _hf_xet;
    durable: fsynced before the clock stops, hfxet_read.py's durable mode)."""
    dest = archive.scratch / "hf-download"
    try:
        seconds = _hf_xet(archive, "durable" if durable else "file", local, str(dest), whole)
        if dest.stat().st_size != local.stat().st_size:
            raise RuntimeError(f"hf_xet wrote {dest.stat().st_size} bytes")
        return seconds
    finally:
        dest.unlink(missing_ok=True)


def _curl(archive: Archive, local: Path) -> float:
    """Seconds curl took to GET the file's ARK URL to /dev/null."""
    out = subprocess.run(
        [
            *("curl", "-sSf", "-o", "/dev/null", "-w", "%{size_download} %{time_total}"),
            *("-H", f"Authorization: Bearer {READ_TOKEN}", archive.ark_url(local)),
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    size, seconds = out.stdout.split()
    if int(size) != local.stat().st_size:
        raise RuntimeError(f"curl got {size} bytes of {archive.ark_url(local)}")
    return float(seconds)


def _cold(
    run: Callable[[], float], size: int, disk: Path | None = None
) -> Callable[[], dict[str, float]]:
    """A side that drops the page cache, then reports size / run() in MB/s, and, given a
    path, the MB the disk holding it wrote meanwhile (disk_mb; none on a RAM file system)."""

    def side() -> dict[str, float]:
        drop_caches()
        before = disk_written(disk) if disk else None
        out = {"mbps": size / 1e6 / run()}
        after = disk_written(disk) if disk else None
        if before is not None and after is not None:
            out["disk_mb"] = (after - before) / 1e6
        return out

    return side


def bench_cold(archive: Archive, local: Path, kind: str, cache: str) -> list[Figure]:
    """Cold sequential read of a big file through the mount, against hf_xet (to a file and
    streamed) and curl from the same server. Leaves the last mount's cache in cache."""
    size, label = local.stat().st_size, f"{size_label(local)} {kind}"

    def mount_side() -> dict[str, float]:
        drop_caches()
        with archive.mount(cache) as mount:
            path = archive.in_mount(mount, local)
            path.stat()  # the lookups are not part of the read
            before = archive.fetched(mount)
            seconds = read_seconds(path)
            return {
                "mbps": size / 1e6 / seconds,
                "amplification": (archive.fetched(mount) - before) / size,
                "peak_rss": mount.peak_rss() / MIB,
            }

    got = interleaved(
        {
            "mount": mount_side,
            "hf_xet file": _cold(lambda: _hf_xet_file(archive, local), size),
            "hf_xet stream": _cold(lambda: _hf_xet(archive, "stream", local), size),
            "curl": _cold(lambda: _curl(archive, local), size),
        }
    )
    name, mbps = f"cold sequential read, {label}", value(got["mount"], "mbps")
    return [
        compare(
            name,
            "MB/s",
            mbps,
            value(got["hf_xet file"], "mbps"),
            "hf_xet download to a file",
            None,
            SEQUENTIAL,
        ),
        compare(
            name,
            "MB/s",
            mbps,
            value(got["hf_xet stream"], "mbps"),
            "hf_xet download stream, no disk",
            None,
            SEQUENTIAL,
        ),
        compare(
            name,
            "MB/s",
            mbps,
            value(got["curl"], "mbps"),
            "curl of the ARK URL",
            ">= 0.9",  # issue 31: a verified read within 10% of a raw download
            SEQUENTIAL,
        ),
        compare(
            f"read amplification, sequential, {label}",
            AMPLIFICATION,
            value(got["mount"], "amplification"),
            None,
            "",
            None,
            LATENCY,
            note=archive.fetched_source(),
        ),
        compare(
            f"mount peak RSS, cold sequential read, {label}",
            "MiB",
            value(got["mount"], "peak_rss"),
            None,
            "",
            RSS_TARGET,
            MEMORY,
        ),
    ]


def fill_cache(archive: Archive, local: Path, cache: str) -> None:
    """Make sure the chunk cache in cache holds all of local (a cold read may skip
    caching chunks when its write backlog is full): read it again until it does."""
    for _ in range(3):
        with archive.mount(cache, fresh=False) as mount:
            path = archive.in_mount(mount, local)
            with path.open("rb") as f:
                f.read(1)  # user.arkfs.cached says 0.00 until the file's map is loaded
            if os.getxattr(path, "user.arkfs.cached") == b"1.00":
                return
            read_seconds(path)
    raise RuntimeError(f"the chunk cache does not hold all of {local.name} after 3 reads")


def bench_warm_hot(archive: Archive, local: Path) -> list[Figure]:
    """Warm and hot sequential reads of the random file: the mount against a trivial
    pyfuse3 filesystem serving it from memory and against the local file."""
    fill_cache(archive, local, WARM_CACHE)
    size = local.stat().st_size

    def mount_side() -> dict[str, float]:
        drop_caches()
        with archive.mount(WARM_CACHE, fresh=False) as mount:
            path = archive.in_mount(mount, local)
            path.stat()
            warm = read_seconds(path)
            hot = read_seconds(path)
            return {
                "warm": size / 1e6 / warm,
                "hot": size / 1e6 / hot,
                "peak_rss": mount.peak_rss() / MIB,
            }

    def cold_then_hot(path: Path) -> dict[str, float]:
        drop_caches()
        cold = read_seconds(path)
        return {"cold": size / 1e6 / cold, "hot": size / 1e6 / read_seconds(path)}

    with trivial_mount(local) as trivial:
        got = interleaved(
            {
                "mount": mount_side,
                "trivialfs": lambda: cold_then_hot(trivial),
                "local": lambda: cold_then_hot(local),
            }
        )
    mount = got["mount"]
    warm = value(mount, "warm")
    return [
        compare(
            "warm sequential read (chunk cache full)",
            "MB/s",
            warm,
            value(got["trivialfs"], "cold"),
            "trivial pyfuse3 FS from memory",
            ">= 0.6",
            SEQUENTIAL,
        ),
        compare(
            "warm sequential read (chunk cache full)",
            "MB/s",
            warm,
            value(got["local"], "cold"),
            "local file, cold",
            None,  # information only: it measures this machine's disk, not arkfs
            SEQUENTIAL,
        ),
        compare(
            "hot re-read (page cache)",
            "MB/s",
            value(mount, "hot"),
            value(got["local"], "hot"),
            "local file, hot",
            None,
            SEQUENTIAL,
        ),
        compare(
            "hot re-read (page cache)",
            "MB/s",
            value(mount, "hot"),
            value(got["trivialfs"], "hot"),
            "trivial pyfuse3 FS, hot: the FUSE ceiling",
            ">= 0.9",
            SEQUENTIAL,
        ),
        compare(
            "mount peak RSS, warm and hot reads",
            "MiB",
            value(mount, "peak_rss"),
            None,
            "",
            RSS_TARGET,
            MEMORY,
        ),
    ]


def _random_reads(archive: Archive, local: Path, block: int) -> dict[str, float]:
    """Bytes fetched per byte read, for block-sized reads at fixed-seed random offsets of
    the cold file through a fresh mount."""
    drop_caches()
    size = local.stat().st_size
    rng = random.Random(block)
    offsets = [rng.randrange(size // block) * block for _ in range(RANDOM_READS[block])]
    with archive.mount("random-reads") as mount:
        path = archive.in_mount(mount, local)
        path.stat()
        before = archive.fetched(mount)
        fd = os.open(path, os.O_RDONLY)
        try:
            read = sum(len(os.pread(fd, block, offset)) for offset in offsets)
        finally:
            os.close(fd)
        return {"amplification": (archive.fetched(mount) - before) / read}


def _first_byte(archive: Archive, local: Path) -> dict[str, float]:
    """Milliseconds from open() to the byte in the middle of the cold file, fresh mount."""
    drop_caches()
    with archive.mount("first-byte") as mount:
        path = archive.in_mount(mount, local)
        path.stat()
        start = time.perf_counter()
        fd = os.open(path, os.O_RDONLY)
        try:
            if len(os.pread(fd, 1, local.stat().st_size // 2)) != 1:
                raise RuntimeError("no byte in the middle of the file")
        finally:
            os.close(fd)
        return {"ms": 1000 * (time.perf_counter() - start)}


def bench_latency(archive: Archive, local: Path) -> list[Figure]:
    """First byte in the middle of a cold file, against hf_xet's ranged read of that byte;
    read amplification of 4 KiB and 1 MiB random reads of a cold file."""
    middle = str(local.stat().st_size // 2)

    def hf_side() -> dict[str, float]:
        drop_caches()
        return {"ms": 1000 * _hf_xet(archive, "byte", local, middle)}

    got = interleaved(
        {
            "mount": lambda: _first_byte(archive, local),
            "hf_xet": hf_side,
            "4 KiB": lambda: _random_reads(archive, local, 4096),
            "1 MiB": lambda: _random_reads(archive, local, MIB),
        }
    )
    source = archive.fetched_source()
    return [
        compare(
            f"first byte, middle of a cold {size_label(local)} file",
            "ms",
            value(got["mount"], "ms"),
            value(got["hf_xet"], "ms"),
            "hf_xet ranged stream of that byte",
            "<= 1.0",
            LATENCY,
        ),
        compare(
            f"read amplification, 4 KiB random, cold ({RANDOM_READS[4096]} reads)",
            AMPLIFICATION,
            value(got["4 KiB"], "amplification"),
            None,
            "",
            None,
            LATENCY,
            note=source,
        ),
        compare(
            f"read amplification, 1 MiB random, cold ({RANDOM_READS[MIB]} reads)",
            AMPLIFICATION,
            value(got["1 MiB"], "amplification"),
            None,
            "",
            None,
            LATENCY,
            note=source,
        ),
    ]
