"""Driving hf_xet, the reference client, through its session API."""

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import hf_xet


def upload_files(endpoint: str, paths: Sequence[Path], token: str = "test-token") -> list[Any]:
    """Upload paths with hf_xet; return its info of each (.hash, .file_size, .sha256)."""
    session = hf_xet.XetSession()
    expiry = int(time.time()) + 3600
    with session.new_upload_commit(
        endpoint=endpoint, token=token, token_expiry_unix_secs=expiry
    ) as commit:
        uploads = [commit.start_upload_file(str(p)) for p in paths]
    return [u.result().xet_info for u in uploads]


def _expiry() -> int:
    return int(time.time()) + 3600


def download_file(endpoint: str, file_hash: str, size: int, dest: Path, token: str = "t") -> None:
    """Download one file with hf_xet to dest."""
    session = hf_xet.XetSession()
    with session.new_file_download_group(
        endpoint=endpoint, token=token, token_expiry_unix_secs=_expiry()
    ) as group:
        group.start_download_file(hf_xet.XetFileInfo(file_hash, size), str(dest))


def download_range(
    endpoint: str, file_hash: str, size: int, start: int, end: int, token: str = "t"
) -> bytes:
    """Bytes [start, end) of a file, through hf_xet's ranged stream."""
    group = hf_xet.XetSession().new_download_stream_group(
        endpoint=endpoint, token=token, token_expiry_unix_secs=_expiry()
    )
    stream = group.download_stream(hf_xet.XetFileInfo(file_hash, size), start=start, end=end)
    return b"".join(stream)
