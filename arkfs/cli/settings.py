"""Every mount setting once: the command line's value, else the config file's, else the
default, and where it came from (`arkfs config show` prints them)."""

import argparse
from pathlib import Path

from arkfs.mount.config import DEFAULT_TTL, SETTINGS, ResolverConfig
from arkfs.util import paths

COMMAND_LINE = "command line"
DEFAULT = "default"
DEFAULT_CACHE_SIZE = "10G"
LOG_NAME = "mount.log"
KEYS = (*SETTINGS, "metadata_ttl")


def defaults() -> dict[str, object]:
    """Each setting's value when neither the command line nor the config gives one."""
    return {
        "cache_dir": paths.cache_dir(),
        "cache_size": DEFAULT_CACHE_SIZE,
        "metadata_ttl": DEFAULT_TTL,
        "log": None,  # CACHE_DIR/LOG_NAME, or stderr in the foreground
        "log_level": "info",
        "allow_other": False,
        "allow_root": False,
        "uid": None,  # the mounting user's
        "gid": None,
        "umask": 0,
        "noexec": False,
        "noxattr": False,
        "hide_xattrs": False,
        "token_file": None,
        "allow_private": False,
    }


def given(args: argparse.Namespace) -> dict[str, object]:
    """The settings the command line gives (None: not given)."""
    level = args.log_level or ("debug" if args.verbose else None)
    return {
        "cache_dir": args.cache_dir,
        "cache_size": args.cache_size,
        "metadata_ttl": args.metadata_ttl,
        "log": args.log,
        "log_level": level,
        "allow_other": True if args.sharing == "allow_other" else None,
        "allow_root": True if args.sharing == "allow_root" else None,
        "uid": args.uid,
        "gid": args.gid,
        "umask": args.umask,
        "noexec": True if args.noexec else None,
        "noxattr": True if args.no_xattrs else None,
        "hide_xattrs": True if args.hide_xattrs else None,
        "token_file": args.token_file,
        "allow_private": True if args.allow_private else None,
    }


def effective(args: argparse.Namespace, config: ResolverConfig) -> dict[str, tuple[object, str]]:
    """key -> (value, where it came from): the command line, the config file, the default."""
    from_file = dict(config.settings)
    if config.metadata_ttl is not None:
        from_file["metadata_ttl"] = config.metadata_ttl
    out: dict[str, tuple[object, str]] = {}
    line, default = given(args), defaults()
    for key in KEYS:
        if line[key] is not None:
            out[key] = (line[key], COMMAND_LINE)
        elif key in from_file:
            out[key] = (from_file[key], str(config.path))
        else:
            out[key] = (default[key], DEFAULT)
    if out["allow_other"][0] and out["allow_root"][0]:  # the command line chose one of them
        other = "allow_root" if out["allow_other"][1] == COMMAND_LINE else "allow_other"
        out[other] = (False, COMMAND_LINE)
    return out


def shown(value: object) -> str:
    """A setting's value as the config file would spell it."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, Path | str):
        return f'"{value}"'
    return "(unset)" if value is None else str(value)
