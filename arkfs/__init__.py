"""arkfs: browse and read ARK-named archives stored in XET content-addressed storage."""

from __future__ import annotations

if False:  # typing only: the command line starts faster without importing typing
    from typing import Any

__version__ = "0.1.0"

_API = ("Client", "open", "info", "resolve")  # arkfs/api.py, imported on first use


def __getattr__(name: str) -> Any:
    """arkfs.open, arkfs.info, arkfs.resolve and arkfs.Client (loaded lazily: the CLI and
    the mount import arkfs without needing them)."""
    if name in _API:
        from arkfs import api

        return getattr(api, name)
    raise AttributeError(f"module 'arkfs' has no attribute {name!r}")
