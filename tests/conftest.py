"""Session-wide test settings: hf_xet writes its state into a temporary HF_HOME."""

import os
import shutil
import tempfile

import pytest

_HF_HOME = tempfile.mkdtemp(prefix="arkfs-test-hf-")
os.environ["HF_HOME"] = _HF_HOME
os.environ["HF_XET_TELEMETRY_ENABLED"] = "false"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    shutil.rmtree(_HF_HOME, ignore_errors=True)


# The real S3 and PostgreSQL servers, for every test that asks for them.
pytest_plugins = ["tests.support.scale_fixtures"]
