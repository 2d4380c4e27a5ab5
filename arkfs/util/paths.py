"""Where arkfs keeps things by default, following the XDG Base Directory spec.

Each base directory comes from its XDG variable when that is an absolute path (the spec
says to ignore a relative one), else from its default under the home directory.
"""

import os
from pathlib import Path


def _xdg(variable: str, default: str) -> Path:
    value = os.environ.get(variable)
    if value and Path(value).is_absolute():
        return Path(value) / "arkfs"
    return Path.home() / default / "arkfs"


def data_dir() -> Path:
    """$XDG_DATA_HOME/arkfs, else ~/.local/share/arkfs."""
    return _xdg("XDG_DATA_HOME", ".local/share")


def cache_dir() -> Path:
    """$XDG_CACHE_HOME/arkfs, else ~/.cache/arkfs."""
    return _xdg("XDG_CACHE_HOME", ".cache")


def config_dir() -> Path:
    """$XDG_CONFIG_HOME/arkfs, else ~/.config/arkfs."""
    return _xdg("XDG_CONFIG_HOME", ".config")
