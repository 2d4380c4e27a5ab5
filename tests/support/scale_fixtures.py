"""Session fixtures of the real S3 and PostgreSQL servers, and a fresh scaled store per test."""

from collections.abc import Iterator

import pytest

from arkfs.store.scaled import ScaledStore
from tests.support.services import PostgreSQL, ScaledPlace, SeaweedFS, new_place, running


@pytest.fixture(scope="session")
def seaweedfs() -> Iterator[SeaweedFS]:
    """One SeaweedFS for the session; tests take their own buckets."""
    with running(SeaweedFS()) as server:
        yield server


@pytest.fixture(scope="session")
def postgresql() -> Iterator[PostgreSQL]:
    """One PostgreSQL cluster for the session; tests take their own databases."""
    with running(PostgreSQL()) as server:
        yield server


@pytest.fixture
def own_postgresql() -> Iterator[PostgreSQL]:
    """A PostgreSQL of this test alone, to stop and start."""
    with running(PostgreSQL()) as pg:
        yield pg


@pytest.fixture
def own_seaweedfs() -> Iterator[SeaweedFS]:
    """A SeaweedFS of this test alone, to stop and start."""
    with running(SeaweedFS()) as weed:
        yield weed


@pytest.fixture
def scaled_place(seaweedfs: SeaweedFS, postgresql: PostgreSQL) -> ScaledPlace:
    """A new bucket and database for one test."""
    return new_place(seaweedfs, postgresql)


@pytest.fixture
def scaled_store(scaled_place: ScaledPlace) -> Iterator[ScaledStore]:
    """A scaled store in a new bucket and database."""
    p = scaled_place
    with ScaledStore.open(p.location, p.endpoint, p.index) as store:
        yield store
