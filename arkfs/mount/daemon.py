"""The mount's lifecycle: checks, daemonizing, readiness, serving, and a clean unmount.

The CLI runs the cheap checks (check_fuse, check_mountpoint, the options), then
run_daemon forks: fork, setsid, fork again, so the daemon is nobody's child and has no
terminal (run_foreground serves in the calling process instead). The
daemon opens the backends, probes them (a refused token fails the mount now, not as EIO
later), mounts, and stats the mount root through its own FUSE loop; only then does it
report ready over a pipe, and the parent exits 0. Before that, a failure travels up the
same pipe as one line, and the parent raises it as a MountError.

Pipe protocol, one line each: `W text` a warning, `R pid` ready, `E u|f text` a failure
(u: the user must fix something).

SIGUSR2 toggles debug logging. SIGINT and SIGTERM unmount: pyfuse3.terminate() ends the
FUSE loop; requests still in flight after TERMINATE_GRACE are cancelled;
pyfuse3.close(unmount=True) always runs. Once the loop has ended, the reader gets
CLOSE_GRACE to finish its cache writes before the rest is cancelled, so what the last
reads fetched is on disk for the next mount.
"""

import ctypes
import ctypes.util
import errno
import logging
import os
import shutil
import signal
import stat
import sys
from collections.abc import Callable
from pathlib import Path

import pyfuse3
import trio

from arkfs.backend.base import BackendError, Unauthorized
from arkfs.mount.backends import MountError, MountOptions, open_catalog
from arkfs.mount.data.chunk_cache import ChunkCache
from arkfs.mount.data.reader import ContentReader
from arkfs.mount.fuse.operations import ArkOperations
from arkfs.mount.names.namespace import Namespace
from arkfs.mount.stats import MountStats
from arkfs.util.allocator import tune_gc
from arkfs.util.sdnotify import notify

log = logging.getLogger(__name__)

MOUNT_OPTIONS = frozenset({"ro", "nosuid", "nodev", "subtype=arkfs", "default_permissions"})
FSTYPE = "fuse.arkfs"
FUSE_CONF = Path("/etc/fuse.conf")
SHARING = ("allow_other", "allow_root")  # who besides the mounting user may use the mount
READAHEAD_KB = 1024  # so the kernel sends 1 MiB reads
READY_TIMEOUT = 60.0
M_ARENA_MAX = -8  # mallopt parameter number, from glibc malloc.h
TERMINATE_GRACE = 5.0
LOG_FORMAT = "%(asctime)s arkfs[%(process)d] %(levelname)s %(name)s: %(message)s"


def fuse_options(opts: MountOptions) -> set[str]:
    """The FUSE mount options of opts."""
    out = set(MOUNT_OPTIONS) | {"fsname=" + opts.fsname.replace(",", "%2C")}
    if opts.sharing is not None:
        out.add(opts.sharing)
    if opts.noexec:
        out.add("noexec")
    return out


def check_sharing(sharing: str | None, conf: Path = FUSE_CONF, euid: int | None = None) -> None:
    """Raise MountError when a user other than root (euid, default this process's) asks for
    allow_other or allow_root and the FUSE config does not let users do that."""
    if sharing is None or (os.geteuid() if euid is None else euid) == 0:
        return
    try:
        lines = conf.read_text().splitlines()
    except OSError:
        lines = []
    if "user_allow_other" not in (line.strip() for line in lines):
        raise MountError(
            f"{sharing} needs the line user_allow_other in {conf}: add it (as root), or "
            "mount as root",
            usage=True,
        )


def check_fuse() -> None:
    """Raise MountError unless this process can mount FUSE filesystems."""
    if not os.path.exists("/dev/fuse"):
        raise MountError(
            "FUSE is not available: /dev/fuse is missing (load the fuse module, or give the "
            "container --device /dev/fuse)",
            usage=True,
        )
    if os.geteuid() != 0 and shutil.which("fusermount3") is None:
        raise MountError("fusermount3 is missing: install the fuse3 package", usage=True)


def check_mountpoint(path: Path) -> Path:
    """The absolute mountpoint, if it is an existing empty directory that is not mounted."""
    path = Path(os.path.realpath(path))
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise MountError(f"mountpoint {path} does not exist: create it first", usage=True) from None
    except OSError as exc:
        if exc.errno == errno.ENOTCONN:
            raise MountError(
                f"{path} is a dead mount: run `arkfs umount {path}` first", usage=True
            ) from None
        raise MountError(f"cannot use {path} as a mountpoint: {exc.strerror}", usage=True) from None
    if not stat.S_ISDIR(st.st_mode):
        raise MountError(f"mountpoint {path} is not a directory", usage=True)
    if path in mounted():
        raise MountError(
            f"{path} is already a mountpoint: unmount it first (arkfs umount {path})", usage=True
        )
    if os.listdir(path):
        raise MountError(f"mountpoint {path} is not empty: mount on an empty directory", usage=True)
    return path


def _unescape_mountinfo(field_text: str) -> str:
    """A mountinfo path field with its octal escapes (\\040 for a space) decoded."""
    out, i = [], 0
    while i < len(field_text):
        if field_text[i] == "\\" and field_text[i + 1 : i + 4].isdigit():
            out.append(chr(int(field_text[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(field_text[i])
            i += 1
    return "".join(out)


def mounted() -> dict[Path, str]:
    """Mountpoint -> filesystem type, from /proc/self/mountinfo (touches no mount)."""
    out = {}
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields, _, rest = line.partition(" - ")
            parts = fields.split()
            if len(parts) >= 5 and rest:
                out[Path(_unescape_mountinfo(parts[4]))] = rest.split()[0]
    return out


def _check_and_tune(mountpoint: Path) -> None:
    """Stat the mount root (so through our own FUSE loop: proof it serves), then raise the
    FUSE device readahead so buffered reads arrive as 1 MiB requests."""
    dev = os.stat(mountpoint).st_dev
    path = f"/sys/class/bdi/{os.major(dev)}:{os.minor(dev)}/read_ahead_kb"
    try:
        with open(path, "w") as f:
            f.write(str(READAHEAD_KB))
    except OSError as exc:
        log.warning("cannot raise the readahead (%s): %s", path, exc.strerror or exc)


async def _watch_signals(scope: trio.CancelScope, loop_ended: trio.Event) -> None:
    """On SIGINT or SIGTERM, end the FUSE loop; cancel what still runs after TERMINATE_GRACE."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            log.info("%s: unmounting", signal.Signals(signum).name)
            notify("STOPPING=1")
            pyfuse3.terminate()
            with trio.move_on_after(TERMINATE_GRACE):
                await loop_ended.wait()
                return  # _fuse_main finishes the job
            log.error(
                "requests still running %.0f s after the signal: cancelling them", TERMINATE_GRACE
            )
            scope.cancel()
            return


async def _fuse_main(reader: ContentReader, scope: trio.CancelScope, ended: trio.Event) -> None:
    """Serve until the FUSE loop ends; let the reader finish its cache writes; stop the rest."""
    await pyfuse3.main()
    ended.set()
    notify("STOPPING=1")
    log.info("the FUSE loop ended: unmounted")
    await reader.aclose()  # before the cancel below, which would drop those writes
    scope.cancel()


async def _until_serving(mountpoint: Path) -> str | None:
    """Wait until the mount answers (then raise its readahead); why not, or None."""
    try:
        with trio.fail_after(READY_TIMEOUT):
            await trio.to_thread.run_sync(_check_and_tune, mountpoint, abandon_on_cancel=True)
    except trio.TooSlowError:
        return f"the mount at {mountpoint} did not answer within {READY_TIMEOUT:.0f} s"
    except OSError as exc:
        return f"the mount at {mountpoint} does not answer: {exc.strerror or exc}"
    return None


def _few_malloc_arenas() -> None:
    """Cap glibc's malloc arenas at 2 before worker threads start.

    By default each thread that allocates gets an arena of its own; with a dozen worker
    threads handling megabyte buffers, freed memory stays spread over them and the
    daemon's resident size grows by a third for nothing.
    """
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.mallopt(M_ARENA_MAX, 2)
    except (OSError, AttributeError):
        pass  # not glibc: nothing to tune


async def serve(opts: MountOptions, ready: Callable[[], None], warn: Callable[[str], None]) -> None:
    """Mount and serve until unmounted or signalled; call ready() once requests are served."""
    _few_malloc_arenas()
    catalog = await open_catalog(opts)
    try:
        try:
            for warning in await catalog.probe():
                warn(warning)
        except Unauthorized as exc:  # its message says to pass --token or set ARKFS_TOKEN
            hint = ""
            if opts.config.servers or opts.config.naans:  # --token is not theirs
                hint = "; a server named in the config file takes its token from [tokens]"
            raise MountError(f"{exc}{hint}", usage=True) from None
        except BackendError as exc:
            raise MountError(str(exc)) from None
        cache = ChunkCache(opts.cache_dir, opts.cache_size)
        stats = MountStats()
        reader = ContentReader(cache, stats)
        ns = Namespace(catalog, opts.metadata_ttl)
        ops = ArkOperations(ns, reader, stats, cache, opts.owner, opts.xattrs, opts.hide_xattrs)
        tune_gc()
        try:
            pyfuse3.init(ops, str(opts.mountpoint), fuse_options(opts))
        except RuntimeError as exc:
            raise MountError(
                f"FUSE could not mount {opts.mountpoint}: {exc}; see the log"
            ) from None
        failure: str | None = None
        try:
            # MountErrors are raised outside the nursery, which would wrap them in a group.
            async with trio.open_nursery() as nursery:
                await nursery.start(reader.run)
                loop_ended = trio.Event()
                nursery.start_soon(_watch_signals, nursery.cancel_scope, loop_ended)
                nursery.start_soon(toggle_debug_on_sigusr2, opts.log_level)
                nursery.start_soon(_fuse_main, reader, nursery.cancel_scope, loop_ended)
                failure = await _until_serving(opts.mountpoint)
                if failure is None:
                    log.info("mounted %s", opts.mountpoint)
                    ready()
                    notify("READY=1", f"STATUS=serving {opts.fsname} at {opts.mountpoint}")
                else:
                    nursery.cancel_scope.cancel()
        finally:
            ops.close()
            pyfuse3.close(unmount=True)
            await reader.aclose()
        if failure is not None:
            raise MountError(failure)
    finally:
        await catalog.aclose()


async def toggle_debug_on_sigusr2(level: int) -> None:
    """Each SIGUSR2 switches the log between DEBUG and level (INFO when level is DEBUG),
    as mountpoint-s3 does."""
    root = logging.getLogger()
    quiet = logging.INFO if level == logging.DEBUG else level
    with trio.open_signal_receiver(signal.SIGUSR2) as signals:
        async for _ in signals:
            new = quiet if root.level == logging.DEBUG else logging.DEBUG
            root.setLevel(new)
            log.warning("SIGUSR2: logging at %s now", logging.getLevelName(new))


def setup_logging(log_file: Path | None, level: int = logging.INFO) -> None:
    """Log to log_file (or stderr) from level up, one line each, never a URL's query."""
    handler: logging.Handler
    if log_file is None:
        handler = logging.StreamHandler(sys.stderr)
    else:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(log_file)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # httpx logs every request URL at INFO, and fetch URLs carry signatures.
    for noisy in ("httpx", "httpcore", "hpack"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def run_foreground(opts: MountOptions) -> None:
    """Mount in this process until unmounted or interrupted."""
    setup_logging(opts.log_file, opts.log_level)

    def ready() -> None:
        print(f"arkfs: mounted {opts.mountpoint}", flush=True)

    def warn(text: str) -> None:
        print(f"arkfs: warning: {text}", file=sys.stderr, flush=True)

    try:
        trio.run(serve, opts, ready, warn)
    except MountError as exc:
        log.error("%s", exc)
        raise


class _Pipe:
    """The daemon's end of the readiness pipe."""

    def __init__(self, fd: int) -> None:
        self.fd: int | None = fd

    def send(self, line: str) -> None:
        if self.fd is not None:
            os.write(self.fd, (" ".join(line.splitlines()) + "\n").encode())

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _daemon(opts: MountOptions, fd: int) -> int:
    """The daemon's life after the forks; returns its exit status."""
    pipe = _Pipe(fd)
    try:
        os.chdir("/")
        assert opts.log_file is not None
        setup_logging(opts.log_file, opts.log_level)
        # libfuse and stray prints write to stdout and stderr: send them to the log, and
        # let go of the caller's terminal or pipes.
        null = os.open(os.devnull, os.O_RDONLY)
        out = os.open(opts.log_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.dup2(null, 0)
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.close(null)
        os.close(out)

        def ready() -> None:
            pipe.send(f"R {os.getpid()}")
            pipe.close()

        trio.run(serve, opts, ready, lambda text: pipe.send(f"W {text}"))
        return 0
    except MountError as exc:
        log.error("%s", exc)
        pipe.send(f"E {'u' if exc.usage else 'f'} {exc}")
    except BaseException as exc:
        log.exception("the mount failed")
        pipe.send(f"E f the mount failed: {exc!r}")
    finally:
        pipe.close()
    return 1


def run_daemon(opts: MountOptions) -> int:
    """Fork the daemon; once it serves, return its pid. Its failure raises MountError."""
    assert opts.log_file is not None
    opts.log_file.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the first child: detach, fork the daemon, and go
        status = 1
        try:
            os.close(read_fd)
            os.setsid()
            status = _daemon(opts, write_fd) if os.fork() == 0 else 0
        finally:
            os._exit(status)
    os.close(write_fd)
    os.waitpid(pid, 0)
    with os.fdopen(read_fd, "r") as pipe:
        for line in pipe:
            kind, _, text = line.rstrip("\n").partition(" ")
            if kind == "W":
                print(f"arkfs: warning: {text}", file=sys.stderr)
            elif kind == "R":
                return int(text)
            elif kind == "E":
                usage, _, message = text.partition(" ")
                raise MountError(message, usage=usage == "u")
    raise MountError(f"the mount process ended before the mount was ready; see {opts.log_file}")
