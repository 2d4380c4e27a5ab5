"""`arkfs store gc` on S3 (SeaweedFS) + PostgreSQL: the same scenario as the directory
store's, with an object planted in the bucket that no index row names (issue 27)."""

from pathlib import Path

import pytest

from arkfs.store.scaled import ScaledStore
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
