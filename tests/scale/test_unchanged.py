"""The hf_xet interop and mount end-to-end suites of the earlier issues, unchanged, with
every `arkfs serve` they start on a bucket and database (ARKFS_TEST_STORE=s3)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.services import TEST_STORE_VARIABLE

REPO = Path(__file__).resolve().parents[2]
# Suites that reach the store only through `arkfs serve`. The others look into the store
# directory (LocalStore, damage by file) or count xorb bytes the server itself served,
# which a bucket store hands out as pre-signed URLs instead.
SUITES = (
    "tests/server/test_cas_with_hf_xet.py",
    "tests/server/test_nma.py",
    "tests/server/test_nma_versions.py",
    "tests/server/test_nma_literal.py",
    "tests/server/test_tokens.py",
    "tests/publish/test_publish_server.py",
    "tests/publish/test_versions_cli.py",
    "tests/backend/test_open.py",
    "tests/mounted/test_server_back.py",
    "tests/mounted/test_mount_token.py",
    "tests/mounted/test_archive_cache.py",
)


@pytest.mark.slow
def test_earlier_suites_pass_unchanged_on_the_scaled_store(tmp_path: Path) -> None:
    log = tmp_path / "places"
    env = os.environ | {TEST_STORE_VARIABLE: "s3", f"{TEST_STORE_VARIABLE}_LOG": str(log)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", *SUITES],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "skipped" not in summary and "passed" in summary, summary
    # Each suite's servers ran on a bucket: one per store directory they were given.
    assert len(log.read_text().splitlines()) >= len(SUITES), log.read_text()
