"""`arkfs publish` through the fault-injecting proxy: transient faults are ridden out, a
fault that does not end fails the publish with one line (exit 1), and a later publish
completes. Whatever happened, the archive then reads back equal and `store check` finds no
damage."""

import random
from pathlib import Path

import pytest

from tests.support.cli import run_arkfs
from tests.support.faults import fault_proxy
from tests.support.mount import arkfs_mount
from tests.support.server import Server

MIB = 1 << 20
ARK = "ark:12345/x6pubfault"

# (mode, the requests it hits, how many, whether the publish must succeed)
CASES = {
    "5xx-burst": ("5xx", "any", 3, True),
    "reset-once": ("reset", "upload", 1, True),
    "truncate-once": ("truncate", "upload", 1, True),
    "stall-head-once": ("stall-head", "upload", 1, True),
    "5xx-forever": ("5xx", "upload", None, False),
    "reset-forever": ("reset", "any", None, False),
}


def publish(url: str, tree: Path) -> tuple[int, str]:
    done = run_arkfs(
        "publish", "-q", str(tree), "--ark", ARK, "--server", url, "--token", "writer",
        "--who", "w", "--what", "w", "--persistence", "p", timeout=300,
    )  # fmt: skip
    return done.returncode, done.stderr


@pytest.mark.parametrize(
    "case", [pytest.param(c, marks=pytest.mark.slow) if "stall" in c else c for c in CASES]
)
def test_publish_through_faults(case: str, tmp_path: Path) -> None:
    mode, kind, count, must_succeed = CASES[case]
    (tmp_path / "tokens").write_text("writer write\n")
    tree = tmp_path / "tree"
    tree.mkdir()
    rng = random.Random(case)
    files = {f"f{i}.bin": rng.randbytes(3 * MIB + i) for i in range(4)}
    for name, data in files.items():
        (tree / name).write_bytes(data)
    store = tmp_path / "store"
    with Server(store, "--open-read", "--tokens", str(tmp_path / "tokens")) as server:
        with fault_proxy(server.url) as proxy:
            proxy.inject(mode, kind, count)
            code, err = publish(proxy.url, tree)
            assert proxy.damaged > 0
            proxy.heal()
            if must_succeed:
                assert code == 0, err
            else:
                assert code == 1, err
                assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
                code, err = publish(proxy.url, tree)
                assert code == 0, err
        args = ("--server", server.url, "--cache-dir", str(tmp_path / "cache"))
        with arkfs_mount(tmp_path / "mnt", *args) as m:
            for name, data in files.items():
                assert (m.path / ARK / name).read_bytes() == data
    check = run_arkfs("store", "check", str(store))
    assert check.returncode == 0 and "no damage" in check.stdout, check.stdout + check.stderr
