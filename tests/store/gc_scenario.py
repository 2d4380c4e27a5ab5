"""The `arkfs store gc` scenario, run on the directory store (tests/store/test_gc.py) and on
S3 + PostgreSQL (tests/scale/test_gc_scaled.py): real `arkfs serve`, publish, hf_xet."""

import os
import re
from collections.abc import Callable
from pathlib import Path

import httpx

from tests.support.cli import run_arkfs
from tests.support.hfxet import upload_files
from tests.support.server import arkfs_server

ARK = "ark:99999/gc7tree"
READ = {"Authorization": "Bearer writer"}


def _freed(out: str) -> int:
    match = re.search(r"\((\d+) bytes\)", out)
    assert match, out
    return int(match[1])


def gc_scenario(
    tmp_path: Path,
    serve_store: tuple[str, ...],
    cli_store: tuple[str, ...],
    plant: Callable[[], None] | None = None,
) -> None:
    """Two versions, an abandoned upload (and a planted object): gc keeps what is young,
    then frees exactly the garbage; check is clean and every version still reads."""
    (tmp_path / "tokens").write_text("writer write\n")
    tree = tmp_path / "tree"
    tree.mkdir()
    v1 = {"keep.bin": os.urandom(200_000), "old.bin": os.urandom(150_000)}
    v2 = {"keep.bin": v1["keep.bin"], "new.bin": os.urandom(120_000)}
    store, *rest = serve_store
    with arkfs_server(store, *rest, "--tokens", str(tmp_path / "tokens")) as (url, _):
        for files in (v1, v2):
            for p in tree.iterdir():
                p.unlink()
            for name, data in files.items():
                (tree / name).write_bytes(data)
            done = run_arkfs(
                "publish", str(tree), "--ark", ARK, "--server", url, "--token", "writer"
            )
            assert done.returncode == 0, done.stderr
        abandoned = tmp_path / "abandoned.bin"
        abandoned.write_bytes(os.urandom(300_000))
        before = os.environ.get("HF_HOME")
        os.environ["HF_HOME"] = str(tmp_path / "hf")  # hf_xet's state, out of the home dir
        try:
            upload_files(url, [abandoned], token="writer")  # uploaded, never bound
        finally:
            if before is None:
                del os.environ["HF_HOME"]
            else:
                os.environ["HF_HOME"] = before
        if plant is not None:
            plant()

        young = run_arkfs("store", "gc", *cli_store)  # default grace: a day
        assert young.returncode == 0, young.stderr
        assert _freed(young.stdout) == 0 and "0 xorbs" in young.stdout, young.stdout
        dry = run_arkfs("store", "gc", *cli_store, "--grace", "0", "--dry-run")
        assert dry.returncode == 0 and "would delete" in dry.stdout, dry.stderr
        assert _freed(dry.stdout) >= 300_000, dry.stdout
        done = run_arkfs("store", "gc", *cli_store, "--grace", "0")
        assert done.returncode == 0, done.stderr
        assert _freed(done.stdout) == _freed(dry.stdout), (dry.stdout, done.stdout)
        again = run_arkfs("store", "gc", *cli_store, "--grace", "0")
        assert _freed(again.stdout) == 0, again.stdout

        check = run_arkfs("store", "check", *cli_store)
        assert check.returncode == 0 and "no damage found" in check.stdout, check.stdout
        for version, files in ((1, v1), (2, v2)):
            for name, data in files.items():
                got = httpx.get(f"{url}/{ARK}/@v{version}/{name}", headers=READ, timeout=60)
                assert got.status_code == 200 and got.content == data, (version, name)
