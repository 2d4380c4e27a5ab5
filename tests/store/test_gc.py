"""`arkfs store gc` on the directory store: frees what no version references, keeps what
a publish in progress may still bind, and every version still reads (issue 27)."""

import random
import time
from pathlib import Path

import pytest

from arkfs.store.errors import Rejected
from arkfs.store.local import LocalStore
from tests.store.factory import file_of, first_chunks, random_xorb, shard_blob
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


def test_a_shard_naming_a_xorb_gc_deleted_is_refused_not_left_dangling(tmp_path: Path) -> None:
    rng = random.Random(27)
    with LocalStore.open(tmp_path / "s") as store:
        x = random_xorb(rng)
        store.put_xorb(x.hash, x.data)
        store.xorb_footer(x.hash)  # cached, as a dedup answer or an earlier upload leaves it
        report = store.collect(set(), time.time() + 1)  # no version needs it, and it is old
        assert report.xorbs == 1 and report.xorb_bytes == len(x.data)
        with pytest.raises(Rejected, match="is not stored"):
            store.put_shard(*shard_blob(rng), [file_of([x])], first_chunks([x]))
        assert store.check() == []
