"""`arkfs store gc` on the directory store: frees what no version references, keeps what
a publish in progress may still bind, and every version still reads (issue 27)."""

from pathlib import Path

from tests.store.gc_scenario import gc_scenario
from tests.support.cli import run_arkfs


def test_gc_frees_the_garbage_of_a_directory_store(tmp_path: Path) -> None:
    store = str(tmp_path / "store")

    def plant() -> None:  # a xorb-named file no index knows, as an interrupted copy leaves
        junk = tmp_path / "store" / "xorbs" / "ab"
        junk.mkdir(parents=True, exist_ok=True)
        (junk / ("ab" + "0" * 62)).write_bytes(b"x" * 1000)

    gc_scenario(tmp_path, (store,), (store,), plant)


def test_gc_of_no_store_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = run_arkfs("store", "gc", str(tmp_path / "nothing"))
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
