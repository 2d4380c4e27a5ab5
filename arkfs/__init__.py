"""arkfs: browse and read ARK-named archives stored in XET content-addressed storage."""

from __future__ import annotations

if False:  # typing only: the command line starts faster without importing typing
    from typing import Any

import sys

__version__ = "0.1.0"

# httpx imports its own command line (click, rich, pygments) whenever those are installed,
# as they are beside huggingface_hub: 60-85 ms of every arkfs command's start-up, for code
# arkfs never runs. Marked missing, it is skipped (httpx then defines a stub `main`).
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]

_API = ("BadArk", "Client", "open", "info", "resolve")  # arkfs/api.py, imported on first use


def __getattr__(name: str) -> Any:
    """arkfs.open, arkfs.info, arkfs.resolve, arkfs.Client and arkfs.BadArk (loaded
    lazily: the CLI and the mount import arkfs without needing them)."""
    if name in _API:
        from arkfs import api

        return getattr(api, name)
    raise AttributeError(f"module 'arkfs' has no attribute {name!r}")
