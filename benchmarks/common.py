"""What every benchmark shares: the result record, timing, fixed-seed files, and the
processes under test (`arkfs serve`, `arkfs mount`), each stopped however a run ends."""

import json
import mmap
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

MIB = 1024 * 1024
ARKFS = str(Path(sys.executable).parent / "arkfs")
QUICK = os.environ.get("ARKFS_BENCH_QUICK") == "1"  # small corpora, for developing
REPEAT = 3  # runs per figure; each figure is their median
NOISY_LOAD = 1.0  # a 1-minute load average above this, before the run starts, marks it noisy
# The report's sections, in its order.
INGEST, SEQUENTIAL, RANDOM = "hash and ingest", "sequential reads", "random reads (fio, 4 jobs)"
LATENCY, METADATA = "first byte and read amplification", "metadata (small-file tree)"
MEMORY, SCALE = "memory (peak RSS)", "1,000,000-file archive"
SECTIONS = (INGEST, SEQUENTIAL, RANDOM, LATENCY, METADATA, MEMORY, SCALE)
T = TypeVar("T")


@dataclass
class Figure:
    """One line of the report: arkfs against a reference, and the target it must meet.

    The target (e.g. ">= 0.5") bounds the ratio arkfs/reference, or the arkfs value itself
    when there is no reference; None means the line is shown for information. A side that
    could not be measured is None, and error says why.
    """

    name: str
    unit: str
    arkfs: float | None
    reference: float | None
    reference_name: str
    target: str | None
    section: str = ""
    error: str | None = None
    note: str = ""  # how it was measured, when the name cannot say
    spread: tuple[float, float] | None = None  # arkfs: lowest and highest of the runs
    reference_spread: tuple[float, float] | None = None
    # The highest 1-minute load average seen around it: the bench's own processes count
    # too (hf_xet, fio and the mount use both cores), so it informs but does not judge.
    load: float | None = None

    @property
    def ratio(self) -> float | None:
        if self.arkfs is None or not self.reference:
            return None
        return self.arkfs / self.reference

    @property
    def met(self) -> bool | None:
        judged = self.ratio if self.reference_name else self.arkfs
        if self.target is None or judged is None:
            return None
        op, value = self.target.split()
        return judged >= float(value) if op == ">=" else judged <= float(value)


@dataclass
class Failed:
    """A measurement that raised: what and why, in one line."""

    why: str


def attempt(what: str, run: Callable[[], T]) -> T | Failed:
    """run(), or a Failed saying why (that one line goes to stderr too), so one failure
    costs one measurement, not the whole report."""
    try:
        return run()
    except Exception as exc:
        failed = Failed(f"{what}: {type(exc).__name__}: {exc}"[:400])
        print(f"bench: failed: {failed.why}", file=sys.stderr)
        return failed


class Spread(float):
    """A median that keeps the lowest and highest of the runs it is the median of (any
    arithmetic on it gives a plain float)."""

    low: float
    high: float

    def __new__(cls, median: float, low: float, high: float) -> "Spread":
        out = super().__new__(cls, median)
        out.low, out.high = low, high
        return out


def spread_of(x: float | None) -> tuple[float, float] | None:
    """(lowest, highest) of a Spread, else None."""
    return (x.low, x.high) if isinstance(x, Spread) else None


Result = dict[str, float] | Failed


def value(result: Result, key: str) -> float | Failed:
    """One number of a measurement's results, or its failure."""
    return result if isinstance(result, Failed) else result[key]


def compare(
    name: str,
    unit: str,
    arkfs: float | Failed | None,
    reference: float | Failed | None,
    reference_name: str,
    target: str | None,
    section: str,
    note: str = "",
) -> Figure:
    """A Figure from measured sides, either of which may have failed."""
    errors = [side.why for side in (arkfs, reference) if isinstance(side, Failed)]
    ours = None if isinstance(arkfs, Failed) else arkfs
    theirs = None if isinstance(reference, Failed) else reference
    return Figure(
        name,
        unit,
        None if ours is None else float(ours),
        None if theirs is None else float(theirs),
        reference_name,
        target,
        section,
        "; ".join(errors) or None,
        note,
        spread_of(ours),
        spread_of(theirs),
    )


def interleaved(
    sides: dict[str, Callable[[], dict[str, float]]], repeat: int = REPEAT
) -> dict[str, Result]:
    """Run each side repeat times, taking turns, so a drift in the machine's load hits
    every side alike. Per side: the median of each number it reports, as a Spread (the
    maximum of peak_* numbers), or its first failure (after which that side is not run
    again)."""
    results: dict[str, list[dict[str, float]]] = {side: [] for side in sides}
    failures: dict[str, Failed] = {}
    for _ in range(repeat):
        for side, run in sides.items():
            if side not in failures:
                outcome = attempt(side, run)
                if isinstance(outcome, Failed):
                    failures[side] = outcome
                else:
                    results[side].append(outcome)
    return {side: failures.get(side) or _summary(results[side]) for side in sides}


def _summary(runs: list[dict[str, float]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for key in runs[0]:
        values = [r[key] for r in runs]
        peak = key.startswith("peak_")
        out[key] = (
            max(values) if peak else Spread(statistics.median(values), min(values), max(values))
        )
    return out


def random_file(path: Path, size: int, seed: int) -> Path:
    """Write size random bytes from a fixed seed (once; reused while the size matches)."""
    if not (path.exists() and path.stat().st_size == size):
        rng = random.Random(seed)
        with path.open("wb") as f:
            for _ in range(size // (16 * MIB)):
                f.write(rng.randbytes(16 * MIB))
            f.write(rng.randbytes(size % (16 * MIB)))
    return path


def median_seconds(run: Callable[[], object], repeat: int = REPEAT) -> float:
    """Median wall time of repeat runs."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def size_label(path: Path) -> str:
    """A file's size for a figure's name: 1 GiB, 64 MiB."""
    size = path.stat().st_size
    return f"{size / 2**30:g} GiB" if size >= 2**30 else f"{size / MIB:g} MiB"


def drop_caches() -> None:
    """Write back dirty pages, then drop the page cache, dentries and inodes (needs root)."""
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3\n")


def disk_written(path: Path) -> int | None:
    """Bytes written so far to the block device that holds path (its sysfs stat), or None
    where path is on none (tmpfs, overlay) or the kernel does not say."""
    dev = os.stat(path).st_dev
    try:
        fields = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}/stat").read_text().split()
    except OSError:
        return None
    return int(fields[6]) * 512  # sectors written: the kernel counts them in 512 bytes


# A VM's free page reporting (virtio-balloon) hands freed guest pages back to the host;
# the next write into one faults it in again on the host. Each side drops the page cache
# first, so a side that writes a GiB into the page cache (hf_xet's download to a file,
# curl) paid 2-6 s of system CPU for what costs 1.1-1.2 s on memory the host still backs,
# and which cost it paid swung from run to run; `arkfs get` writes past the page cache and
# barely sees it. This kernel's page_reporting.min_free_ms keeps freed pages in the guest
# that long, so for the run every side writes to backed memory, as on a machine of its own.
FREE_PAGE_DELAY = Path("/sys/module/page_reporting/parameters/min_free_ms")
HELD_MS = 300_000  # 5 min, the most this kernel takes: each side reuses within seconds
PRIMED = 2 * 2**30  # memory touched once, then freed, so the held free pages start backed


@contextmanager
def backed_free_memory() -> Iterator[str]:
    """Hold freed pages in the guest for the run, where the kernel allows it; yields a line
    saying what was done. ARKFS_BENCH_PAGE_REPORTING=keep leaves the machine as it is."""
    if os.environ.get("ARKFS_BENCH_PAGE_REPORTING") == "keep":
        yield "free page reporting left as it is (ARKFS_BENCH_PAGE_REPORTING=keep)"
        return
    try:
        was = FREE_PAGE_DELAY.read_text().strip()
    except OSError:  # no free page reporting here (bare metal), or no such knob
        yield "no free page reporting to hold back"
        return
    try:
        FREE_PAGE_DELAY.write_text(f"{HELD_MS}\n")
    except OSError as exc:
        yield f"free page reporting could not be held back ({exc.strerror}): ratios may swing"
        return
    try:
        _touch(PRIMED)
        yield f"free page reporting held for the run (min_free_ms {was} -> {HELD_MS}, then back)"
    finally:
        with shielded():
            FREE_PAGE_DELAY.write_text(f"{was}\n")


def _touch(size: int) -> None:
    """Write one byte in each page of size bytes of new memory, then free it."""
    with mmap.mmap(-1, size) as memory, memoryview(memory) as view:
        view[:: mmap.PAGESIZE] = b"\x01" * len(range(0, size, mmap.PAGESIZE))


def read_seconds(path: Path, block: int = MIB) -> float:
    """Seconds to read path from start to end in block-sized reads (to nowhere)."""
    buffer = bytearray(block)
    total = 0
    start = time.perf_counter()
    with path.open("rb", buffering=0) as f:
        while n := f.readinto(buffer):
            total += n
    elapsed = time.perf_counter() - start
    if total != path.stat().st_size:
        raise RuntimeError(f"read {total} bytes of {path}, expected {path.stat().st_size}")
    return elapsed


def peak_rss(pid: int) -> int:
    """The high-water mark of a process's resident memory (VmHWM), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmHWM for pid {pid}")


@contextmanager
def shielded() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back (they arrive afterwards), so cleanup runs to its end.
    Children started meanwhile inherit the mask: only short-lived tools should be."""
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _wait_gone(pid: int, timeout: float) -> bool:
    """Wait for a process that is not our child to exit; whether it did."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not Path(f"/proc/{pid}").exists():
            return True
        time.sleep(0.05)
    return False


@dataclass(frozen=True)
class Server:
    """A running `arkfs serve`."""

    url: str
    pid: int

    def peak_rss(self) -> int:
        """The server's peak resident memory so far, in bytes."""
        return peak_rss(self.pid)

    def stats(self, token: str) -> dict[str, int] | None:
        """The CAS counters of GET /v1/stats, or None if this server has no such route."""
        request = urllib.request.Request(
            f"{self.url}/v1/stats", headers={"Authorization": f"Bearer {token}"}
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as reply:
                return json.loads(reply.read())
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise


@contextmanager
def arkfs_server(store: Path | str, tokens: Path, *extra: str) -> Iterator[Server]:
    """`arkfs serve --store STORE EXTRA...` on a free port of 127.0.0.1 for the duration."""
    proc = subprocess.Popen(
        [ARKFS, "serve", "--store", str(store), "--port", "0", "--tokens", str(tokens), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        if " on " not in line:
            raise RuntimeError(f"arkfs serve did not start: {line!r}")
        yield Server(line.rsplit(" on ", 1)[1].strip(), proc.pid)
    finally:
        with shielded():
            stop(proc)


@dataclass(frozen=True)
class Mount:
    """A running `arkfs mount`: its mountpoint and daemon."""

    path: Path
    pid: int

    def stats(self) -> dict[str, int]:
        """The mount's counters (`arkfs stats --json`)."""
        out = subprocess.run(
            [ARKFS, "stats", str(self.path), "--json"],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        return json.loads(out.stdout)

    def peak_rss(self) -> int:
        """The daemon's peak resident memory so far, in bytes."""
        return peak_rss(self.pid)


@contextmanager
def arkfs_mount(url: str, token: str, cache: Path, *extra: str) -> Iterator[Mount]:
    """A fresh `arkfs mount` of the server at url (with options extra), on a new temporary
    mountpoint.

    Afterwards it is unmounted (`arkfs umount`, else `fusermount3 -uz`) and its daemon
    waited for, so that its cache writes are done before the next mount uses the cache.
    """
    mountpoint = Path(tempfile.mkdtemp(prefix="arkfs-bench-mnt-"))
    pid = None
    try:
        done = subprocess.run(
            [ARKFS, "mount", str(mountpoint), "--server", url, "--cache-dir", str(cache), *extra],
            env=os.environ | {"ARKFS_TOKEN": token},
            capture_output=True,
            text=True,
            timeout=120,
        )
        if done.returncode != 0:
            raise RuntimeError(f"arkfs mount failed: {done.stderr.strip() or done.stdout}")
        found = re.search(r"\(pid (\d+)", done.stdout)
        pid = int(found[1]) if found else int(Mount(mountpoint, 0).stats()["pid"])
        yield Mount(mountpoint, pid)
    finally:  # also when interrupted while `arkfs mount` ran: then the pid is unknown
        with shielded():
            unmount(mountpoint, pid)
            with suppress(OSError):
                mountpoint.rmdir()


def stop(proc: subprocess.Popen[str]) -> None:
    """End a child process: SIGTERM, then SIGKILL after 30 s."""
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def is_mounted(path: Path) -> bool:
    """Whether path is a mountpoint, from /proc/self/mountinfo (touches no mount)."""
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == str(path) for line in f)


def unmount(mountpoint: Path, pid: int | None) -> None:
    """Unmount an arkfs mount if mounted (`arkfs umount`, else `fusermount3 -uz`), then
    wait for its daemon, which we started, to exit (kill it if it does not)."""
    if is_mounted(mountpoint):
        umount = subprocess.run([ARKFS, "umount", str(mountpoint)], capture_output=True, timeout=60)
        if umount.returncode != 0:
            subprocess.run(["fusermount3", "-uz", str(mountpoint)], capture_output=True, timeout=60)
    if pid is not None and not _wait_gone(pid, 30):
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        _wait_gone(pid, 10)


def store_cas_bytes(store: Path) -> int:
    """Bytes of xorbs and shards a store directory holds: what a XET client uploads (an
    arkfs manifest, which hf_xet has no counterpart of, is not counted)."""
    return sum(
        p.stat().st_size for d in ("xorbs", "shards") for p in (store / d).rglob("*") if p.is_file()
    )
