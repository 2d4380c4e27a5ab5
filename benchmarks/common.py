"""What every benchmark shares: fixed-seed corpora, timing, and the result record."""

import json
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

RESULTS = Path(__file__).parent / "results"
MIB = 1024 * 1024
ARKFS = str(Path(sys.executable).parent / "arkfs")


@dataclass
class Figure:
    """One line of the report: arkfs against a reference, and the target for their ratio."""

    name: str
    unit: str
    arkfs: float
    reference: float
    reference_name: str
    target: str  # e.g. ">= 0.5"

    @property
    def ratio(self) -> float:
        return self.arkfs / self.reference if self.reference else float("nan")

    @property
    def met(self) -> bool:
        op, value = self.target.split()
        return self.ratio >= float(value) if op == ">=" else self.ratio <= float(value)


def random_file(path: Path, size: int, seed: int) -> Path:
    """Write size random bytes from a fixed seed (once; reused while the size matches)."""
    if not (path.exists() and path.stat().st_size == size):
        rng = random.Random(seed)
        with path.open("wb") as f:
            for _ in range(size // (16 * MIB)):
                f.write(rng.randbytes(16 * MIB))
            f.write(rng.randbytes(size % (16 * MIB)))
    return path


def median_seconds(run: Callable[[], object], repeat: int = 3) -> float:
    """Median wall time of repeat runs."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def write_results(figures: list[Figure]) -> Path:
    """Write results/latest.json with the machine's cores and memory."""
    RESULTS.mkdir(exist_ok=True)
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    record = {
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"cores": os.cpu_count(), "memory_bytes": mem},
        "figures": [asdict(f) | {"ratio": f.ratio, "met": f.met} for f in figures],
    }
    out = RESULTS / "latest.json"
    out.write_text(json.dumps(record, indent=2) + "\n")
    return out


def print_table(figures: list[Figure]) -> None:
    """Print the figures as an aligned table."""
    print(f"{'figure':<34}{'arkfs':>12}{'reference':>12}{'ratio':>8}  target   result")
    for f in figures:
        print(
            f"{f.name:<34}{f.arkfs:>12.1f}{f.reference:>12.1f}{f.ratio:>8.2f}  {f.target:<8} "
            f"{'met' if f.met else 'MISSED'}  ({f.unit}; reference: {f.reference_name})"
        )


@contextmanager
def arkfs_server(store: Path, tokens: Path) -> Iterator[str]:
    """`arkfs serve` on a free port of 127.0.0.1 for the duration; yields its base URL."""
    proc = subprocess.Popen(
        [ARKFS, "serve", "--store", str(store), "--port", "0", "--tokens", str(tokens)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        if " on " not in line:
            raise SystemExit(f"arkfs serve did not start: {line!r}")
        yield line.rsplit(" on ", 1)[1].strip()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def store_xorb_bytes(store: Path) -> int:
    """Bytes of xorbs a store directory holds."""
    return sum(p.stat().st_size for p in (store / "xorbs").rglob("*") if p.is_file())
