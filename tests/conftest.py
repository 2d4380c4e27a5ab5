"""Session-wide test settings: hf_xet's state, arkfs's state and default cache live in
temporary directories; at the end, no log any test produced may hold a token or a signed
URL."""

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.support.secrets import SERVER_LOGS, leaks, logs_under, tokens_in

_HF_HOME = tempfile.mkdtemp(prefix="arkfs-test-hf-")
os.environ["HF_HOME"] = _HF_HOME
os.environ["HF_XET_TELEMETRY_ENABLED"] = "false"
_STATE_HOME = tempfile.mkdtemp(prefix="arkfs-test-state-")  # publish's tree indexes
os.environ["XDG_STATE_HOME"] = _STATE_HOME
# The default chunk and archive cache: a user's ~/.cache/arkfs kept versions of the tests'
# archives (ark:12345/x7tables@v1) from an earlier run, whose stores are gone.
_CACHE_HOME = tempfile.mkdtemp(prefix="arkfs-test-cache-")
os.environ["XDG_CACHE_HOME"] = _CACHE_HOME
_SERVER_LOGS = tempfile.mkdtemp(prefix="arkfs-test-serve-logs-")
os.environ[SERVER_LOGS] = _SERVER_LOGS

# Hypothesis's per-example deadline and its too-slow health check are timing assertions: on
# a loaded machine (two test workers on two cores) they fail tests that are right.
settings.register_profile("arkfs", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("arkfs")


@pytest.fixture(scope="session", autouse=True)
def _no_log_holds_a_secret(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """After every test: grep the mount logs, --log files, captured stderr and servers'
    stderr of the whole session for tokens and URL signatures."""
    yield
    base = tmp_path_factory.getbasetemp()
    found = leaks(logs_under(base, Path(_SERVER_LOGS)), tokens_in(base))
    assert not found, "secrets in logs:\n" + "\n".join(found[:20])


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    shutil.rmtree(_HF_HOME, ignore_errors=True)
    shutil.rmtree(_SERVER_LOGS, ignore_errors=True)
    shutil.rmtree(_STATE_HOME, ignore_errors=True)
    shutil.rmtree(_CACHE_HOME, ignore_errors=True)


# The real S3 and PostgreSQL servers, for every test that asks for them.
pytest_plugins = ["tests.support.scale_fixtures"]
