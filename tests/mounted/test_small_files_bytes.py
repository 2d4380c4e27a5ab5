"""Reading many small files through a mount moves about their bytes through `serve` (#28):
reconstruction replies carry only the footers the client lacks, so 2,000 files of 4 KiB in
one xorb cost at most twice their bytes (they cost a whole footer per file)."""

import random
from pathlib import Path

import pytest

from tests.support.archive import publish
from tests.support.mount import arkfs_mount
from tests.support.server import Server

pytestmark = pytest.mark.slow
ARK = "ark:12345/x6small"
FILES, SIZE = 2000, 4096


def test_small_files_cost_at_most_twice_their_bytes(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    rng = random.Random(11)
    for n in range(FILES):
        d = tree / f"d{n // 100:02d}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{n:04d}.bin").write_bytes(rng.randbytes(SIZE))
    publish(tree, ARK, "--store", str(tmp_path / "store"))
    (tmp_path / "tokens").write_text("reader read\n")
    args = ("--open-read", "--tokens", str(tmp_path / "tokens"))
    with Server(tmp_path / "store", *args) as server:
        mount = ("--server", server.url, "--cache-dir", str(tmp_path / "cache"))
        with arkfs_mount(tmp_path / "mnt", *mount) as m:
            for path in sorted(tree.rglob("*.bin")):
                got = (m.path / ARK / path.relative_to(tree)).read_bytes()
                assert got == path.read_bytes(), path
        stats = server.stats("reader")
    assert stats["reconstructions"] >= FILES
    through = (
        stats["reconstruction_bytes_sent"]
        + stats["xorb_bytes_served"]
        + stats["footer_bytes_served"]
    )
    print(f"bytes through serve for {FILES} files of {SIZE} B: {through:,} ({stats})")
    assert through <= 2 * FILES * SIZE
