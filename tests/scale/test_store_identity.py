"""A store that knows itself: `arkfs store init` records one identity in the bucket and the
index, `serve` refuses parts of different stores (or none) with one line and exit 2, runs
no DDL, and `arkfs store migrate` is the one place the schema changes; `store check`
reports what is on one side only."""

import dataclasses
import random
import uuid

import httpx
import psycopg
import pytest

from arkfs.store.scaled import ScaledStore
from arkfs.xet.hashing import hash_to_string
from tests.store.factory import random_xorb
from tests.support.cli import run_arkfs
from tests.support.server import Server
from tests.support.services import PostgreSQL, ScaledPlace, SeaweedFS, init_store, new_place

pytestmark = pytest.mark.slow  # SeaweedFS and PostgreSQL start once per session


def options(place: ScaledPlace) -> tuple[str, ...]:
    """The store options of place, as `arkfs store` takes them."""
    return (place.location, "--s3-endpoint", place.endpoint, "--index", place.index)


def refused(place: ScaledPlace, code: int, *wanted: str) -> str:
    """Start `serve` on place; it must exit with code and one line holding wanted."""
    done = run_arkfs("serve", *place.serve_args(), "--port", "0", "--open-read", timeout=60)
    assert done.returncode == code, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    for text in wanted:
        assert text in lines[0], lines[0]
    return lines[0]


def test_init_then_serve_and_init_is_safe_to_repeat(
    seaweedfs: SeaweedFS, postgresql: PostgreSQL
) -> None:
    place = new_place(seaweedfs, postgresql, init=False)
    refused(place, 2, "is not initialised: run `arkfs store init`")
    done = run_arkfs("store", "init", *options(place))
    assert done.returncode == 0, done.stderr
    assert "create the tables xorbs" in done.stdout and "as the store " in done.stdout
    store_id = done.stdout.rsplit("as the store ", 1)[1].split()[0]
    again = run_arkfs("store", "init", *options(place))
    assert again.returncode == 0, again.stderr
    assert f"is already the store {store_id}" in again.stdout
    bucket, prefix = place.location.removeprefix("s3://").split("/", 1)
    marker = seaweedfs.client.get_object(Bucket=bucket, Key=f"{prefix}/arkfs-store.json")
    assert store_id in marker["Body"].read().decode()
    with Server(place.location, *place.serve_args()[2:], "--open-read") as server:
        assert httpx.get(f"{server.url}/healthz", timeout=30).status_code == 200


def test_parts_of_different_stores_refuse_to_start(
    seaweedfs: SeaweedFS, postgresql: PostgreSQL
) -> None:
    one, other = new_place(seaweedfs, postgresql), new_place(seaweedfs, postgresql)
    empty_index = dataclasses.replace(one, index=postgresql.new_database())
    refused(empty_index, 2, "is empty, but", "correct --index")
    # init against a full bucket with an empty database does not adopt it
    done = run_arkfs("store", "init", *options(empty_index))
    assert done.returncode == 2 and "correct --index" in done.stderr, done.stderr
    refused(empty_index, 2, "is empty, but", "correct --index")
    typo = dataclasses.replace(one, location=one.location + "x")
    refused(typo, 2, "there is no store at", "check the prefix")
    crossed = dataclasses.replace(one, index=other.index)
    refused(crossed, 2, "belongs to the store", "correct --index")


def test_serve_runs_no_ddl_and_a_read_write_role_starts_it(
    seaweedfs: SeaweedFS, postgresql: PostgreSQL
) -> None:
    place = new_place(seaweedfs, postgresql)
    role = f"rw_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(place.index, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
        tables = "ALL TABLES IN SCHEMA public"
        conn.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {tables} TO {role}")
        conn.execute(f"REVOKE CREATE ON SCHEMA public FROM PUBLIC, {role}")
    as_role = dataclasses.replace(place, index=place.index.replace("//arkfs@", f"//{role}@"))
    with Server(as_role.location, *as_role.serve_args()[2:], "--open-read") as server:
        assert httpx.get(f"{server.url}/readyz", timeout=30).status_code == 200
    # and it changes nothing: the schema is exactly what init made
    done = run_arkfs("store", "migrate", *options(as_role), "--dry-run")
    assert done.returncode == 0 and "nothing to do" in done.stdout, done.stdout + done.stderr


def test_an_old_schema_is_refused_until_migrated(
    seaweedfs: SeaweedFS, postgresql: PostgreSQL
) -> None:
    place = new_place(seaweedfs, postgresql)
    with psycopg.connect(place.index, autocommit=True) as conn:  # as schema version 1 was
        conn.execute("DROP TABLE store_identity")
        conn.execute("UPDATE schema_version SET version = 1")
    refused(place, 2, "schema version 1", "run `arkfs store migrate`")
    dry = run_arkfs("store", "migrate", *options(place), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "would create the table store_identity (schema version 2)" in dry.stdout
    refused(place, 2, "schema version 1")  # a dry run changed nothing
    done = run_arkfs("store", "migrate", *options(place))
    assert done.returncode == 0, done.stderr
    assert "create the table store_identity (schema version 2)" in done.stdout
    assert "would" not in done.stdout
    # the index lost its identity with the table; the bucket's marker names the store
    refused(place, 2, "is empty, but", "correct --index")
    bucket, prefix = place.location.removeprefix("s3://").split("/", 1)
    seaweedfs.client.delete_object(Bucket=bucket, Key=f"{prefix}/arkfs-store.json")
    refused(place, 2, "is not initialised")  # as a store made before markers
    assert "as the store" in init_store(place)[-1]  # adopted: neither side holds xorbs
    with Server(place.location, *place.serve_args()[2:], "--open-read") as server:
        assert httpx.get(f"{server.url}/readyz", timeout=30).status_code == 200


def test_start_up_names_a_missing_database_or_role(
    postgresql: PostgreSQL, seaweedfs: SeaweedFS
) -> None:
    place = new_place(seaweedfs, postgresql)
    no_database = dataclasses.replace(place, index=postgresql.url("no_such_database"))
    line = refused(no_database, 1, 'database "no_such_database" does not exist', "createdb")
    assert "PostgreSQL is up" not in line
    no_role = dataclasses.replace(place, index=place.index.replace("//arkfs@", "//nobody@"))
    line = refused(no_role, 1, 'role "nobody" does not exist', "createuser")
    assert "PostgreSQL is up" not in line


def test_store_check_reports_orphans_on_both_sides(
    scaled_store: ScaledStore, scaled_place: ScaledPlace
) -> None:
    rng = random.Random(5)
    kept, orphan, lost = (random_xorb(rng) for _ in range(3))
    for x in (kept, lost):
        scaled_store.put_xorb(x.hash, x.data)
    bucket = scaled_store.bucket
    bucket.put(bucket.key("xorbs", hash_to_string(orphan.hash)), orphan.data)  # no row
    bucket.delete(bucket.key("xorbs", hash_to_string(lost.hash)))  # a row, no object
    done = run_arkfs("store", "check", *options(scaled_place))
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert any(
        line.startswith(f"unindexed object {bucket.key('xorbs', hash_to_string(orphan.hash))}")
        for line in lines
    ), done.stdout
    assert any(f"xorb {hash_to_string(lost.hash)} is indexed" in line for line in lines)
    assert "1 problems" in lines[-1]  # the orphan is reported, not counted as damage
