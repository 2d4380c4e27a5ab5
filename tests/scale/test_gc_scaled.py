"""`arkfs store gc` on S3 (SeaweedFS) + PostgreSQL: the same scenario as the directory
store's, with an object planted in the bucket that no index row names (issue 27)."""

import random
import time
from pathlib import Path

import pytest

from arkfs.store.base import UNINDEXED
from arkfs.store.errors import Rejected
from arkfs.store.scaled import ScaledStore
from tests.store.factory import file_of, first_chunks, random_xorb, shard_blob
from tests.store.gc_scenario import gc_scenario
from tests.support.services import ScaledPlace, SeaweedFS

pytestmark = pytest.mark.slow  # SeaweedFS and PostgreSQL start once per session


def test_gc_frees_the_garbage_of_a_bucket_and_its_index(
    tmp_path: Path, scaled_place: ScaledPlace, seaweedfs: SeaweedFS
) -> None:
    p = scaled_place
    where = (p.location, "--s3-endpoint", p.endpoint, "--index", p.index)

    def plant() -> None:  # an object in the bucket that no index row names
        with ScaledStore.open(p.location, p.endpoint, p.index) as store:
            store.bucket.put(store.bucket.key("xorbs", "cd" + "0" * 62), b"x" * 1000)

    gc_scenario(tmp_path, where, where, plant)


def test_a_shard_naming_a_xorb_gc_deleted_is_refused(scaled_store: ScaledStore) -> None:
    rng = random.Random(27)
    x = random_xorb(rng)
    scaled_store.put_xorb(x.hash, x.data)
    scaled_store.xorb_footer(x.hash)  # cached, as an earlier upload leaves it
    report = scaled_store.collect(set(), time.time() + 60)
    assert report.xorbs == 1 and report.xorb_bytes == len(x.data)
    with pytest.raises(Rejected):
        scaled_store.put_shard(*shard_blob(rng), [file_of([x])], first_chunks([x]))
    # no damage: at most the refused shard's object, which no row names
    assert [p for p in scaled_store.check() if not p.startswith(UNINDEXED)] == []
