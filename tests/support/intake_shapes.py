"""Archive shapes whose shard intake once outlasted the client (issue 28), each new in
every round (salt): tests/scale/test_shard_intake.py and benchmarks/intake.py."""

import random
from collections.abc import Callable
from pathlib import Path

MIB = 1 << 20
Shape = Callable[[Path, int], None]  # writes one round's tree


def zeros(tree: Path, salt: int) -> None:
    """100 MiB of zeros, then the round's number: a new file each round."""
    with open(tree / "zeros.bin", "wb") as f:
        f.truncate(100 * MIB)
        f.seek(0, 2)
        f.write(salt.to_bytes(8, "little"))


def one_block(tree: Path, salt: int) -> None:
    """A file repeating one random 64 KiB block, new in each round."""
    block = random.Random(salt).randbytes(64 * 1024)
    (tree / "repeated.bin").write_bytes(block * 512)  # 32 MiB


def small_files(tree: Path, salt: int) -> None:
    """2,000 files of 4 KiB, new in each round."""
    rng = random.Random(salt)
    for i in range(2000):
        (tree / f"f{i:04d}.bin").write_bytes(rng.randbytes(4096))


def big_files(tree: Path, salt: int) -> None:
    """2.5 GiB in 5 random files of 512 MiB, new in each round."""
    rng = random.Random(salt)
    for i in range(5):
        with open(tree / f"big{i}.bin", "wb") as f:
            for _ in range(32):
                f.write(rng.randbytes(16 * MIB))


SHAPES: list[Shape] = [zeros, one_block, small_files, big_files]
