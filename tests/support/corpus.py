"""The edge-case file corpus that XET tests share, built from fixed seeds."""

import random
import struct
from pathlib import Path

MIB = 1024 * 1024


def _random(n: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(n)


def _text(n: int) -> bytes:
    rng = random.Random(7)
    words = ["archive", "persistent", "identifier", "chunk", "xorb", "the", "of", "ark", "\n"]
    out: list[str] = []
    size = 0
    while size < n:
        w = rng.choice(words)
        out.append(w + " ")
        size += len(w) + 1
    return "".join(out).encode()[:n]


def _floats(n_values: int) -> bytes:
    rng = random.Random(11)
    return struct.pack(f"<{n_values}f", *(rng.gauss(0.0, 1.0) for _ in range(n_values)))


def corpus() -> dict[str, bytes]:
    """Name -> content for every edge case the acceptance criteria name."""
    block = _random(200_000, 3)
    return {
        "empty": b"",
        "one-byte": b"\x42",
        "8191": _random(8191, 1),
        "8192": _random(8192, 1),
        "8193": _random(8193, 1),
        "131071": _random(131071, 2),
        "131072": _random(131072, 2),
        "131073": _random(131073, 2),
        "one-value-1000000": b"\x07" * 1_000_000,
        "random-5MiB": _random(5 * MIB, 4),
        "text": _text(2 * MIB),
        "repeated-blocks": block * 6 + _random(50_000, 5) + block * 3,
        "float32": _floats(600_000),
    }


def write_corpus(directory: Path) -> dict[str, Path]:
    """Write the corpus into directory; return name -> path."""
    paths = {}
    for name, data in corpus().items():
        path = directory / name
        path.write_bytes(data)
        paths[name] = path
    return paths
