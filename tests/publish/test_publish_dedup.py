"""What a republish uploads: only the chunks it does not find stored; on the embedded store
and on `arkfs serve`."""

import json
import random
from pathlib import Path

from arkfs.xet.digest import FileHasher
from tests.support.cli import run_arkfs
from tests.support.targets import target as target

ARK = "ark:12345/x6np1wh8k"


def publish(tree: Path, where: list[str]) -> dict:
    out = run_arkfs("publish", str(tree), "--ark", ARK, *where, "--json", "-q", "--rehash")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def chunks(paths: list[Path]) -> dict[bytes, int]:
    """The chunks of the files, hash to size."""
    out: dict[bytes, int] = {}
    for path in paths:
        hasher = FileHasher()
        out |= {c.hash: c.size for c in hasher.update(path.read_bytes()) + hasher.finish()[0]}
    return out


def test_small_files_changed_in_the_middle_send_only_their_new_chunks(
    tmp_path: Path, target: tuple[list[str], Path]
) -> None:
    """A file of fewer than WINDOW ranges keeps every run of known chunks, as hf_xet's
    DefragPrevention does: the unchanged tail after a change is not sent again (it was,
    while a short file's runs were judged against MIN_RUN_CHUNKS from its first range)."""
    where, _ = target
    tree = tmp_path / "tree"
    tree.mkdir()
    rng = random.Random(4)
    paths = [tree / f"f{i}.bin" for i in range(12)]
    for path in paths:
        path.write_bytes(rng.randbytes(rng.randint(400_000, 900_000)))
    publish(tree, where)
    old = chunks(paths)
    for path in paths:
        with path.open("r+b") as f:
            f.seek(path.stat().st_size * 2 // 5)
            f.write(rng.randbytes(4096))
    second = publish(tree, where)
    new = {h: size for h, size in chunks(paths).items() if h not in old}
    assert second["version"] == 2 and new
    assert second["new_bytes"] == sum(new.values())
