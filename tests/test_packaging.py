"""What `pip install arkfs` gets from a release: the sdist holds every file its C extensions
build from (the vendored BLAKE3's headers were once missing, so installing from it failed),
and the wheel built from that sdist, as pip builds it, imports and runs on its own."""

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import arkfs
from arkfs.xet.chunking import chunk_stream
from arkfs.xet.hashing import chunk_hash, file_hash

pytestmark = pytest.mark.slow

CHECKOUT = Path(arkfs.__file__).parent.parent
EXTENSIONS = ("xet/_gearcut", "xet/_bytegroup", "xet/_merkle", "util/_gather", "archive/_tree")
NOT_SOURCE = (".venv", ".git", "build", "dist", "*.egg-info", "*.so", "__pycache__", ".*_cache")


def run(*argv: str | Path, cwd: Path) -> None:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def test_the_wheel_built_from_the_sdist_holds_and_runs_everything(tmp_path: Path) -> None:
    source = tmp_path / "source"
    shutil.copytree(CHECKOUT, source, ignore=shutil.ignore_patterns(*NOT_SOURCE))
    run(sys.executable, "-m", "build", "--sdist", "-o", tmp_path / "dist", ".", cwd=source)
    [sdist] = (tmp_path / "dist").glob("arkfs-*.tar.gz")
    run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", "wheel", sdist, cwd=tmp_path)
    [wheel] = (tmp_path / "wheel").glob("arkfs-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        entry_points = z.read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
        z.extractall(tmp_path / "site")
    for ext in EXTENSIONS:
        assert any(n.startswith(f"arkfs/{ext}.cpython-") and n.endswith(".so") for n in names)
        assert f"arkfs/{ext}.pyi" in names
    assert {"arkfs/py.typed", "arkfs/xet/blake3/LICENSE_CC0"} <= names
    assert not [n for n in names if n.endswith((".c", ".h"))]  # sources stay in the sdist
    assert "arkfs = arkfs.cli:main" in entry_points
    assert "ark = arkfs.fsspec_ark:ArkFileSystem" in entry_points
    # The wheel's arkfs, not this checkout's, with the checkout's venv for its dependencies:
    # its own extensions load, and cut and hash a file as the checkout's do.
    code = (
        "import sys, arkfs, arkfs.archive._tree, arkfs.util._gather, arkfs.xet._bytegroup\n"
        "from arkfs.xet.chunking import chunk_stream\n"
        "from arkfs.xet.hashing import chunk_hash, file_hash\n"
        "assert arkfs.__file__.startswith(sys.argv[1]), arkfs.__file__\n"
        "data = bytes(range(256)) * 40_000\n"
        "print(file_hash([(chunk_hash(c), len(c)) for c in chunk_stream([data])]).hex())"
    )
    probe = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "site")],
        cwd=tmp_path,  # not the checkout: `-c` puts the working directory first on the path
        env={"PYTHONPATH": str(tmp_path / "site"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    data = bytes(range(256)) * 40_000
    expected = file_hash([(chunk_hash(c), len(c)) for c in chunk_stream([data])]).hex()
    assert probe.returncode == 0 and probe.stdout.strip() == expected, probe.stderr
