"""`arkfs mount`, `arkfs umount` and `arkfs stats`: the archives as a read-only filesystem."""

from __future__ import annotations

import argparse
import contextlib
import errno
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arkfs.cli.common import EXIT_FAILURE, EXIT_USAGE, BadInput
from arkfs.cli.logs import add_log_level_options
from arkfs.cli.resolver_options import add_resolver_options, discovery_from, resolver_config
from arkfs.cli.settings import DEFAULT_CACHE_SIZE, LOG_NAME, effective
from arkfs.cli.token_options import add_token_options, token_from
from arkfs.mount.config import DEFAULT_FALLBACK, DEFAULT_TTL, ConfigError, server_urls
from arkfs.util.sizes import human, parse_size

if TYPE_CHECKING:  # the mount's machinery is imported when a command runs: --help is quick
    import subprocess

    from arkfs.mount.fuse.attributes import Ownership


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `arkfs mount`, `arkfs umount` and `arkfs stats`."""
    p = sub.add_parser(
        "mount",
        help="mount the archives as a read-only filesystem",
        description="Mount every archive the resolvers know under MOUNTPOINT: "
        "MOUNTPOINT/ark:NAAN/Name/... holds the tree of each archive's latest version and "
        "Name/@vN/... that of version N (looked up by name, never listed), `NAME?info` its "
        "ERC record, and extended attributes (getfattr -d -m -) its ARK, metadata, hashes and "
        "(user.ark.versions on Name) its versions. Every byte "
        "read is verified. Returns once the mount is ready, and keeps serving in the "
        "background (unless --foreground) until `arkfs umount MOUNTPOINT`.",
        epilog="Resolution order: a NAAN's [naans] entry in the config file, else the "
        "--server URLs and the config's servers; then, for an ARK none of those binds, the "
        "NAAN registries (--registry, then the config's registry list; the first with a "
        "record for the ARK's shoulder or NAAN decides), whose target is followed through "
        "up to 10 redirects to an ARK service (its /.well-known/ark names the service "
        "path); then, for a NAAN no registry knows, the fallback resolver. Registries and "
        "the fallback are used once either is given; the fallback defaults to "
        f"{DEFAULT_FALLBACK} (--fallback off, or `fallback = false`, turns it off). A "
        "registry URL is kept under CACHE_DIR/registries, fetched again daily, and its copy "
        "serves offline.\n\nAn ARK found this way is a directory when its responder is an arkfs "
        "server, else a read-only file of what it resolves to (its ?info as user.ark.* "
        "attributes, user.ark.url the final URL). With none of these, the embedded store "
        "(--store, $ARKFS_STORE or "
        "~/.local/share/arkfs/store).\n\nThe config file ($ARKFS_CONFIG or "
        "~/.config/arkfs/config.toml) takes `servers = [URL...]`, `store = DIR`, "
        "`metadata_ttl = SECONDS`, `registry = [PATH or URL...]`, `fallback = URL or false`, "
        "every other mount setting by its -o name (cache_dir, cache_size, log, log_level, "
        "allow_other, allow_root, uid, gid, umask, noexec, token_file; the command line "
        "overrides them, and `arkfs config show` shows the result), "
        "a [naans] table of `NAAN = URL or [URL...]` (several URLs are mirrors: read as one, "
        "failing over, bad bytes fetched elsewhere) and a [tokens] table of `ORIGIN = "
        "TOKEN or {file = PATH}`. Tokens belong to their origin: --token goes to the "
        "--server URLs only, a [tokens] entry to its origin only, never across a redirect. "
        "Archives already seen stay readable from the cache when their server is down.\n\n"
        "Examples:\n  arkfs mount ~/arks\n  arkfs mount /mnt/ark --server http://127.0.0.1:8080"
        " --cache-size 20G\n  arkfs mount /arks --allow-other --registry naan_records.json",
    )
    p.add_argument("mountpoint", type=Path, metavar="MOUNTPOINT", help="an empty directory")
    add_mount_options(p)
    p.set_defaults(func=run_mount)

    u = sub.add_parser(
        "umount",
        help="unmount an arkfs mount",
        description="Unmount MOUNTPOINT. If a process still uses it, it is detached lazily: "
        "it disappears now and goes away once the last open file closes.",
    )
    u.add_argument("mountpoint", type=Path, metavar="MOUNTPOINT", help="where arkfs is mounted")
    u.set_defaults(func=run_umount)

    s = sub.add_parser(
        "stats",
        help="show what a mount has read, fetched and cached",
        description="Print the counters of the arkfs mount at MOUNTPOINT: reads, chunk cache "
        "hit rate, bytes fetched, cache size.",
        epilog="For node_exporter's textfile collector, e.g. every minute from cron:\n"
        "  arkfs stats /arks --prometheus > /var/lib/node_exporter/arkfs.prom.$$ &&\n"
        "    mv /var/lib/node_exporter/arkfs.prom.$$ /var/lib/node_exporter/arkfs.prom",
    )
    s.add_argument("mountpoint", type=Path, metavar="MOUNTPOINT", help="where arkfs is mounted")
    form = s.add_argument_group("output").add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="print the raw counters as JSON")
    form.add_argument(
        "--prometheus",
        action="store_true",
        help="print them in the Prometheus text format: arkfs_mount_NAME (counters "
        "arkfs_mount_NAME_total), labelled mountpoint=MOUNTPOINT",
    )
    s.set_defaults(func=run_stats)


def add_mount_options(parser: argparse.ArgumentParser) -> None:
    """Every mount setting as an option (`arkfs mount` and `arkfs config show` take them)."""
    p = parser.add_argument_group("where the archives are")
    p.add_argument(
        "--server",
        action="append",
        default=[],
        metavar="URL",
        help="base URL of an `arkfs serve` (repeatable; asked in order)",
    )
    p.add_argument("--store", type=Path, metavar="DIR", help="an embedded store directory")
    # mount(8)'s helper form passes its SOURCE, so the mount table shows what fstab says
    # and `mount -a` sees the line is mounted (mount_form.py).
    p.add_argument("--fsname", help=argparse.SUPPRESS)
    add_resolver_options(p)
    add_token_options(p, "read token for the --server URLs")
    p = parser.add_argument_group("cache")
    p.add_argument(
        "--cache-dir",
        type=Path,
        metavar="DIR",
        help="chunk and manifest cache (default: $XDG_CACHE_HOME/arkfs or ~/.cache/arkfs)",
    )
    p.add_argument(
        "--cache-size",
        metavar="SIZE",
        help=f"most bytes of chunks to keep on disk, e.g. 500M, 10G (default {DEFAULT_CACHE_SIZE})",
    )
    p.add_argument(
        "--metadata-ttl",
        type=float,
        metavar="SECONDS",
        help="how often the latest version of an archive is checked again (default: the "
        f"config file's metadata_ttl, else {DEFAULT_TTL:.0f}); ARCHIVE/@vN never changes",
    )
    p = parser.add_argument_group("process and logs")
    p.add_argument(
        "-f", "--foreground", action="store_true", help="serve in this process (logs to stderr)"
    )
    p.add_argument(
        "--log", type=Path, metavar="FILE", help=f"log file (default: CACHE_DIR/{LOG_NAME})"
    )
    add_log_level_options(p)
    p = parser.add_argument_group("sharing and permissions")
    shared = p.add_mutually_exclusive_group()
    shared.add_argument(
        "--allow-other",
        dest="sharing",
        action="store_const",
        const="allow_other",
        help="let every user use the mount (a user other than root needs user_allow_other "
        "in /etc/fuse.conf)",
    )
    shared.add_argument(
        "--allow-root",
        dest="sharing",
        action="store_const",
        const="allow_root",
        help="let root use the mount too",
    )
    p.add_argument("--uid", type=int, metavar="UID", help="owner of every file (default: yours)")
    p.add_argument("--gid", type=int, metavar="GID", help="group of every file (default: yours)")
    p.add_argument(
        "--umask",
        type=_octal,
        metavar="OCTAL",
        help="permission bits to clear from every file's mode, e.g. 027",
    )
    p.add_argument("--noexec", action="store_true", help="mount with noexec")
    p.add_argument(
        "--no-xattrs",
        action="store_true",
        help="answer every getxattr with 'not supported', so the kernel stops asking: "
        "`ls -l` gets faster, but no user.ark.* metadata and no `arkfs stats`",
    )
    p.add_argument(
        "--hide-xattrs",
        action="store_true",
        help="list none of arkfs's own xattrs (user.ark.*, user.xet.*), so `cp -a` and "
        "`rsync -aX` copy none; each still answers by name",
    )


def run_mount(args: argparse.Namespace) -> int:
    """Check everything that can be checked here, then mount (as a daemon by default)."""
    from arkfs.mount.backends import MountError

    try:
        return _mount(args)
    except MountError as exc:
        print(f"arkfs: {exc}", file=sys.stderr)
        return EXIT_USAGE if exc.usage else EXIT_FAILURE


def need_pyfuse3() -> None:
    """BadInput with the line that installs it, unless pyfuse3 (the mount's FUSE binding,
    the `fuse` extra: it builds against libfuse3, which get and ark:// never need) is here."""
    try:
        import pyfuse3  # noqa: F401
    except ImportError:
        raise BadInput(
            "the mount needs pyfuse3, which is not installed: pip install 'arkfs[fuse]' "
            "(it builds against libfuse3: apt install libfuse3-dev pkg-config); "
            "arkfs get and ark:// need no FUSE"
        ) from None


def _mount(args: argparse.Namespace) -> int:
    """Check FUSE, the mountpoint and the options; then mount, in the foreground or not."""
    import logging

    need_pyfuse3()

    from arkfs.mount.backends import MountOptions
    from arkfs.mount.daemon import (
        SHARING,
        check_fuse,
        check_mountpoint,
        check_sharing,
        run_daemon,
        run_foreground,
    )

    check_fuse()
    mountpoint = check_mountpoint(args.mountpoint)
    config = resolver_config(args)
    value: dict[str, Any] = {key: v for key, (v, _) in effective(args, config).items()}
    sharing = next((s for s in SHARING if value[s]), None)
    check_sharing(sharing)
    try:
        cache_size = parse_size(str(value["cache_size"]))
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    if args.server:
        try:
            server_urls(args.server, "--server")
        except ConfigError as exc:
            raise BadInput(str(exc)) from None
    discovery = discovery_from(args, config)
    ttl = float(value["metadata_ttl"])
    if not 0 <= ttl < math.inf:
        raise BadInput(f"--metadata-ttl {ttl:g} is not a number of seconds >= 0")
    if args.token is None and args.token_file is None:
        args.token_file = value["token_file"]
    token = token_from(args)  # the daemon is forked, not executed: it gets it in memory
    cache_dir = Path(os.path.abspath(Path(str(value["cache_dir"])).expanduser()))
    cache_size = _checked_cache(cache_dir, cache_size)
    log_file = value["log"]
    if log_file is None and not args.foreground:
        log_file = cache_dir / LOG_NAME
    opts = MountOptions(
        mountpoint=mountpoint,
        servers=tuple(args.server),
        store=Path(os.path.abspath(args.store.expanduser())) if args.store else None,
        config=config,
        cache_dir=cache_dir,
        cache_size=cache_size,
        log_file=Path(os.path.abspath(str(log_file))) if log_file else None,
        foreground=args.foreground,
        token=token,
        metadata_ttl=ttl,
        discovery=discovery,
        fsname=args.fsname
        or _fsname(args.server or config.servers, args.store or config.store, bool(config.naans)),
        sharing=sharing,
        owner=_ownership(value["uid"], value["gid"], value["umask"]),
        noexec=bool(value["noexec"]),
        xattrs=not value["noxattr"],
        hide_xattrs=bool(value["hide_xattrs"]),
        log_level=int(getattr(logging, str(value["log_level"]).upper())),
    )
    if opts.foreground:
        run_foreground(opts)
        return 0
    pid = run_daemon(opts)
    print(f"arkfs: mounted {mountpoint} (pid {pid}, log {opts.log_file})")
    return 0


def _octal(text: str) -> int:
    """An octal number, as umask takes it."""
    return int(text, 8)


def _checked_cache(cache_dir: Path, cache_size: int) -> int:
    """Create the cache directory and check it is writable; the cache size, capped to what
    its filesystem can hold (with a warning)."""
    import shutil
    import tempfile

    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=cache_dir):
            pass
    except OSError as exc:
        raise BadInput(f"cannot write to the cache directory {cache_dir}: {exc.strerror}") from None
    room = shutil.disk_usage(cache_dir).free + _bytes_under(cache_dir)
    if cache_size > room:
        print(
            f"arkfs: warning: --cache-size {human(cache_size)} is more than {cache_dir} can "
            f"hold; using {human(room)}",
            file=sys.stderr,
        )
        return room
    return cache_size


def _bytes_under(root: Path) -> int:
    """Bytes of the files under root (what a cache already holds counts as room)."""
    total = 0
    for folder, _, files in os.walk(root):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(folder, name)).st_size
    return total


def _fsname(servers: Sequence[str], store: Path | None, naans: bool) -> str:
    """The mount's source as mount and df show it: its first server, else its store."""
    if servers:
        return f"arkfs:{servers[0]}"
    return "arkfs:store" if store is not None or not naans else "arkfs"


def _ownership(uid: int | None, gid: int | None, umask: int) -> Ownership | None:
    """uid, gid and umask (each None or 0: the mounting user's, no mask), or None."""
    if uid is None and gid is None and not umask:
        return None
    mask = umask
    if not 0 <= mask <= 0o777:
        raise BadInput(f"--umask {mask:o} is not an octal mask of at most 777")
    for name, value in (("--uid", uid), ("--gid", gid)):
        if value is not None and value < 0:
            raise BadInput(f"{name} {value} is not a user or group number")
    from arkfs.mount.fuse.attributes import Ownership

    mine = Ownership.mounting_user()
    return Ownership(
        mine.uid if uid is None else uid,
        mine.gid if gid is None else gid,
        mask,
    )


def _fusermount(*args: str) -> subprocess.CompletedProcess[str]:
    import subprocess

    return subprocess.run(["fusermount3", *args], capture_output=True, text=True, check=False)


def run_umount(args: argparse.Namespace) -> int:
    """fusermount3 -u; if the mount is busy, detach it lazily (-uz) and say so."""
    need_pyfuse3()
    from arkfs.mount.daemon import FSTYPE, mounted

    mountpoint = Path(os.path.realpath(args.mountpoint))
    fstype = mounted().get(mountpoint)
    if fstype is None:
        raise BadInput(f"{mountpoint} is not mounted")
    if fstype != FSTYPE:
        raise BadInput(f"{mountpoint} is a {fstype} mount, not arkfs: use umount")
    done = _fusermount("-u", str(mountpoint))
    if done.returncode == 0:
        return 0
    if "busy" not in done.stderr:
        print(f"arkfs: cannot unmount {mountpoint}: {done.stderr.strip()}", file=sys.stderr)
        return EXIT_FAILURE
    lazy = _fusermount("-uz", str(mountpoint))
    if lazy.returncode != 0:
        print(f"arkfs: cannot unmount {mountpoint}: {lazy.stderr.strip()}", file=sys.stderr)
        return EXIT_FAILURE
    print(
        f"arkfs: {mountpoint} was busy, so it was detached lazily: it is gone from the "
        "namespace, and its process exits once the last open file in it is closed",
        file=sys.stderr,
    )
    return 0


def _stats_lines(data: dict[str, object]) -> list[str]:
    """The counters for people: sizes in human units, the chunk cache hit rate first."""
    hits, misses = data.get("cache_hits"), data.get("cache_misses")
    lines = []
    if isinstance(hits, int) and isinstance(misses, int):
        rate = f"{100 * hits / (hits + misses):.1f}%" if hits + misses else "-"
        lines.append(f"{'hit rate':<18} {rate} ({hits} of {hits + misses} chunks)")
    for key in sorted(data):
        value = data[key]
        shown = str(value)
        if isinstance(value, int) and ("bytes" in key or key.endswith("_limit")):
            shown = f"{human(value)} ({value})"
        lines.append(f"{key.replace('_', ' '):<18} {shown}")
    return lines


def run_stats(args: argparse.Namespace) -> int:
    """Read user.arkfs.stats from the mount root and print it."""
    import json

    need_pyfuse3()
    from arkfs.mount.daemon import FSTYPE, mounted
    from arkfs.mount.exposition import exposition
    from arkfs.mount.fuse.xattrs import STATS

    mountpoint = Path(os.path.realpath(args.mountpoint))
    try:
        raw = os.getxattr(mountpoint, STATS)
    except OSError as exc:
        if exc.errno == errno.ENOTSUP and mounted().get(mountpoint) == FSTYPE:
            raise BadInput(
                f"{mountpoint} was mounted with --no-xattrs (-o noxattr), so it has no "
                f"{STATS}: remount it without that option to see its stats"
            ) from None
        if exc.errno in (errno.ENODATA, errno.ENOTSUP):
            raise BadInput(f"{mountpoint} is not an arkfs mount (it has no {STATS})") from None
        if exc.errno == errno.ENOTCONN:
            raise BadInput(
                f"the process serving {mountpoint} is gone: run `arkfs umount {mountpoint}`"
            ) from None
        raise BadInput(f"cannot read the stats of {mountpoint}: {exc.strerror}") from None
    data = json.loads(raw)
    if args.json:
        print(json.dumps(data, indent=2, sort_keys=True))
    elif args.prometheus:
        sys.stdout.write(exposition(data, str(mountpoint)).decode())
    else:
        print("\n".join(_stats_lines(data)))
    return 0
