"""`arkfs store check` on a bucket and its database: in full, by sampling, and on damage."""

import random

import psycopg
import pytest

from arkfs.store.scaled import ScaledStore
from tests.store.damage import flip_xorb_byte
from tests.store.factory import file_of, first_chunks, random_xorb, shard_blob
from tests.support.cli import run_arkfs
from tests.support.services import ScaledPlace

pytestmark = pytest.mark.slow  # SeaweedFS and PostgreSQL start once per session


def test_store_check_in_full_by_sampling_and_on_damage(
    scaled_store: ScaledStore, scaled_place: ScaledPlace
) -> None:
    rng = random.Random(8)
    xs = [random_xorb(rng) for _ in range(3)]
    for x in xs:
        scaled_store.put_xorb(x.hash, x.data)
    scaled_store.put_shard(*shard_blob(rng), [file_of(xs)], first_chunks(xs))
    where: tuple[str, ...] = (scaled_place.location, "--s3-endpoint", scaled_place.endpoint)
    where += ("--index", scaled_place.index)
    done = run_arkfs("store", "check", *where)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 xorbs, 1 shards, 1 files, 0 ARKs: no damage found" in done.stdout
    assert run_arkfs("store", "check", *where, "--sample", "1").returncode == 0
    assert run_arkfs("store", "check", *where, "--sample", "0").returncode == 2
    flip_xorb_byte(scaled_store, xs[1].hash, 10)
    done = run_arkfs("store", "check", *where)
    assert done.returncode == 1
    assert "is damaged (chunk 0: hash mismatch" in done.stdout, done.stdout
    assert "3 xorbs, 1 shards, 1 files, 0 ARKs: 3 problems" in done.stdout


def test_check_finds_a_counter_that_disagrees_with_its_rows(
    scaled_store: ScaledStore, scaled_place: ScaledPlace
) -> None:
    x = random_xorb(random.Random(9))
    scaled_store.put_xorb(x.hash, x.data)
    assert scaled_store.stats().xorb_bytes == len(x.data)
    assert scaled_store.check() == []
    with psycopg.connect(scaled_place.index, autocommit=True) as conn:
        conn.execute("UPDATE counters SET value = value + 5 WHERE name = 'files'")
    assert scaled_store.stats().files == 5
    (problem,) = scaled_store.check()
    assert problem.startswith("counter files of the index is 5, its rows count 0")
