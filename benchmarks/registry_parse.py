"""How fast a NAAN registry parses: N records generated from the public snapshot (each
record copied with a new NAAN, shoulder records too), parsed once, then looked up.

    python -m benchmarks.registry_parse [--records 1000000] [--snapshot PATH]
"""

import argparse
import copy
import gzip
import json
import time
from pathlib import Path

from arkfs.ark.normalization import parse
from arkfs.ark.registry import parse_registry

# The public NAAN registry snapshot the tests use (tests/data), gzipped.
SNAPSHOT = Path(__file__).parents[1] / "tests/data/naan_records.json.gz"


def generate(snapshot: Path, count: int) -> str:
    """A registry of count records, cycling through the snapshot's with fresh NAANs."""
    raw = snapshot.read_bytes()
    records = json.loads(gzip.decompress(raw) if snapshot.suffix == ".gz" else raw)["data"]
    out = []
    for i in range(count):
        record = copy.copy(records[i % len(records)])
        naan = f"{i:07d}"  # digits only: every one a valid, distinct NAAN
        if "naan" in record:
            record["naan"] = naan
        else:
            record["what"] = naan
        out.append(record)
    return json.dumps({"metadata": {}, "data": out})


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--records", type=int, default=1_000_000)
    p.add_argument("--snapshot", type=Path, default=SNAPSHOT)
    args = p.parse_args()
    text = generate(args.snapshot, args.records).encode()  # as a file or a reply holds it
    start = time.perf_counter()
    registry = parse_registry(text, "benchmark")
    took = time.perf_counter() - start
    print(
        f"parsed {args.records:,} records ({len(text) / 2**20:.0f} MiB) in {took:.2f} s: "
        f"{args.records / took:,.0f} records/s; {len(registry):,} usable"
    )
    ark = parse(f"ark:{args.records - 1:07d}/x6np1")
    start = time.perf_counter()
    for _ in range(100_000):
        registry.find(ark)
    print(f"lookup: {(time.perf_counter() - start) / 100_000 * 1e6:.2f} µs")


if __name__ == "__main__":
    main()
