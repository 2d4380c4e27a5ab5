"""The form mount(8) and mount.fuse3 call a filesystem helper in, `arkfs SOURCE MOUNTPOINT
-o OPTIONS` (or `mount.arkfs ...`), turned into the equivalent `arkfs mount` command line.

SOURCE is a server URL, `store:/path`, or `arkfs` (the config file's defaults). Every
`arkfs mount` setting is an -o option; mount(8)'s own options are accepted and ignored.
"""

from collections.abc import Sequence

from arkfs.cli.common import BadInput

HELPER_NAME = "mount.arkfs"
DEFAULT_SOURCE = "arkfs"
STORE_PREFIX = "store:"

FLAGS = {  # -o NAME -> `arkfs mount` flag
    "allow_other": "--allow-other",
    "allow_root": "--allow-root",
    "noexec": "--noexec",
    "noxattr": "--no-xattrs",
    "hide_xattrs": "--hide-xattrs",
    "debug": "--log-level=debug",
    "allow_private": "--allow-private",
}
VALUES = {  # -o NAME=VALUE -> `arkfs mount` option
    "uid": "--uid",
    "gid": "--gid",
    "umask": "--umask",
    "cache_dir": "--cache-dir",
    "cache_size": "--cache-size",
    "metadata_ttl": "--metadata-ttl",
    "config": "--config",
    "server": "--server",
    "store": "--store",
    "registry": "--registry",
    "fallback": "--fallback",
    "token_file": "--token-file",
    "log": "--log",
    "log_level": "--log-level",
    "ca_file": "--ca-file",  # https with a private CA (arkfs --ca-file)
}
# mount(8)'s and the VFS's generic options: arkfs is always read-only, nosuid and nodev.
IGNORED = frozenset(
    {"defaults", "ro", "rw", "_netdev", "nofail", "noauto", "auto", "user", "users", "nouser",
     "owner", "group", "dev", "nodev", "suid", "nosuid", "exec", "atime", "noatime", "relatime",
     "strictatime", "nodiratime", "diratime", "lazytime", "sync", "async", "silent", "loud"}
)  # fmt: skip
IGNORED_PREFIXES = ("x-", "comment=", "fsname=", "subtype=")
HELPER_FLAGS = {"-n": None, "-s": None, "-v": "-v"}  # mount(8)'s no-mtab, sloppy, verbose


def is_mount_form(argv: Sequence[str], commands: Sequence[str], prog: str) -> bool:
    """Was arkfs called as a mount helper: as mount.arkfs, or with SOURCE MOUNTPOINT first?"""
    if prog.rsplit("/", 1)[-1] == HELPER_NAME:
        return True
    return len(argv) >= 2 and argv[0] not in commands and not argv[0].startswith("-")


def mount_argv(argv: Sequence[str]) -> list[str]:
    """`SOURCE MOUNTPOINT [-o OPTS]... [-n -s -v]` as the `arkfs mount` argv it means."""
    positional: list[str] = []
    out: list[str] = []
    items = iter(argv)
    for item in items:
        if item == "-o":
            out += _options(next(items, ""))
        elif item.startswith("-o") and len(item) > 2:
            out += _options(item[2:])
        elif item in HELPER_FLAGS:
            flag = HELPER_FLAGS[item]
            out += [flag] if flag else []
        elif item.startswith("-"):
            raise BadInput(f"unknown mount helper flag {item!r}")
        else:
            positional.append(item)
    if len(positional) != 2:
        raise BadInput("usage: arkfs SOURCE MOUNTPOINT [-o OPTIONS] (as mount.fuse3 calls it)")
    source, mountpoint = positional
    trust = [o for o in out if o.startswith("--ca-file=")]  # arkfs's own option, before mount
    rest = [o for o in out if o not in trust]
    return [*trust[-1:], "mount", mountpoint, *_source(source), f"--fsname={source}", *rest]


def _source(source: str) -> list[str]:
    """SOURCE as options: a server URL, store:/path, or arkfs for the config's defaults."""
    if source == DEFAULT_SOURCE:
        return []
    if source.startswith(STORE_PREFIX):
        return ["--store", source[len(STORE_PREFIX) :]]
    if source.startswith(("http://", "https://")):
        return ["--server", source]
    raise BadInput(
        f"mount source {source!r} is not an http(s) server URL, store:/path, or {DEFAULT_SOURCE}"
    )


def _options(text: str) -> list[str]:
    """One -o list as `arkfs mount` options; an unknown option is bad input."""
    out: list[str] = []
    for option in filter(None, text.split(",")):
        name, eq, value = option.partition("=")
        if option in IGNORED or option.startswith(IGNORED_PREFIXES):
            continue
        if option in FLAGS:
            out.append(FLAGS[option])
        elif eq and name in VALUES and value:
            out.append(f"{VALUES[name]}={value}")
        else:
            known = ", ".join([*FLAGS, *(f"{n}=" for n in VALUES)])
            # The name only: a value may be a secret (-o token=...), and errors get logged.
            raise BadInput(f"unknown mount option {name!r} (arkfs takes {known})")
    return out
