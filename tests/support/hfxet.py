"""Driving hf_xet, the reference client, through its session API."""

import time
from collections.abc import Sequence
from pathlib import Path

import hf_xet


def upload_files(endpoint: str, paths: Sequence[Path], token: str = "test-token") -> list[object]:
    """Upload paths with hf_xet; return its file metadata (.hash, .size) in order."""
    session = hf_xet.XetSession()
    expiry = int(time.time()) + 3600
    with session.new_upload_commit(
        endpoint=endpoint, token=token, token_expiry_unix_secs=expiry
    ) as commit:
        uploads = [commit.start_upload_file(str(p)) for p in paths]
    return [u.result() for u in uploads]
