"""The acceptance tree (hundreds of nested files, empty files, sizes at the chunk limits, a
1 GiB file: tests.support.archive.make_full_tree) on real mounts through the real CLI,
against `arkfs serve` (--server) and the embedded store (--store): cp -r, find, ls -lR and
stat, thousands of random reads, read amplification as the server counts it, a server
outage, and unmounts with reads in flight.

The session builds the tree once; each backend gets it published once (a module fixture);
each test mounts it with an empty cache of its own, deleted afterwards with its copies.
Reads that might block go through child processes, so a hang fails a test, never stalls it.
"""

import errno
import hashlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import httpx
import pytest

from arkfs.archive.manifest import Kind, Manifest
from arkfs.mount.data.chunk_cache import ChunkCache
from arkfs.xet.constants import MAX_CHUNK_SIZE
from arkfs.xet.hashing import hash_to_string
from arkfs.xet.reconstruction import Reconstruction
from arkfs.xet.xorb import CHUNK_HEADER_SIZE
from tests.support.archive import BIG_FILE, GIB, MIB, bound, publish
from tests.support.cli import run_arkfs
from tests.support.mount import (
    Mounted,
    arkfs_mount,
    drop_page_cache,
    is_mounted,
    mount_stats,
    pread_in_child,
    pread_once_back,
    wait_for_cache_writes,
    wait_gone,
)
from tests.support.server import Server

ARK = "ark:12345/x6full"
TOKENS = "writer write\nreader read\n"
SERVER, STORE = "server", "store"
BOTH = pytest.mark.parametrize("archive", [SERVER, STORE], indirect=True)
SERVER_ONLY = pytest.mark.parametrize("archive", [SERVER], indirect=True)
TIMEOUT = 600  # seconds: a hang guard for tools and child processes, never a measure


@dataclass(frozen=True)
class Archive:
    """The acceptance tree published to one backend."""

    tree: Path  # the original
    store: Path
    manifest: Manifest
    server: Server | None  # SERVER: the server of store, with a --key-file

    def mount(self, scratch: Path) -> AbstractContextManager[Mounted]:
        """`arkfs mount` on scratch/mnt with the cache in scratch/cache (the read token
        for the server, which wants one)."""
        target = ["--store", str(self.store)]
        if self.server is not None:
            target = ["--server", self.server.url, "--token", "reader"]
        return arkfs_mount(scratch / "mnt", *target, "--cache-dir", str(scratch / "cache"))

    def original(self, rel: str, offset: int, length: int) -> bytes:
        """Bytes of the original file."""
        with open(self.tree / rel, "rb") as f:
            return os.pread(f.fileno(), length, offset)


def in_mount(m: Mounted, rel: str = "") -> Path:
    """Where a path of the archive is in a mount."""
    return m.path / ARK / rel


@pytest.fixture(scope="module")
def archive(request: pytest.FixtureRequest, full_tree: Path) -> Iterator[Archive]:
    """The tree published with `arkfs publish` into a store (STORE), or through `arkfs serve`
    (SERVER: write and read tokens, and a key file so tokens and URLs outlive restarts)."""
    with tempfile.TemporaryDirectory(prefix=f"arkfs-{request.param}-") as tmp:
        root = Path(tmp)
        store = root / "store"
        if request.param == STORE:
            publish(full_tree, ARK, "--store", str(store))
            yield Archive(full_tree, store, bound(store, ARK)[0], None)
            return
        (root / "tokens").write_text(TOKENS)
        (root / "key").write_bytes(os.urandom(32))
        extra = ("--tokens", str(root / "tokens"), "--key-file", str(root / "key"))
        with Server(store, *extra) as server:
            publish(full_tree, ARK, "--server", server.url, "--token", "writer")
            yield Archive(full_tree, store, bound(store, ARK)[0], server)


@pytest.fixture
def scratch() -> Iterator[Path]:
    """Room for a mountpoint, a cache and copies: gigabytes, so deleted after the test."""
    with tempfile.TemporaryDirectory(prefix="arkfs-scratch-") as tmp:
        yield Path(tmp)


@contextmanager
def running(*cmds: list[str]) -> Iterator[list[subprocess.Popen[str]]]:
    """Start child processes (pipes for stdin, stdout, stderr); kill those still running
    on the way out."""
    procs: list[subprocess.Popen[str]] = []
    try:
        for cmd in cmds:
            procs.append(
                subprocess.Popen(
                    cmd,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
        yield procs
    finally:
        for proc in procs:
            proc.kill()
            proc.communicate()


def sh(*cmd: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run a tool in the C locale; capture its text output."""
    return subprocess.run(
        [str(c) for c in cmd],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=cwd,
        env={**os.environ, "LC_ALL": "C"},
        check=False,
    )


def lines(*cmd: str | Path, cwd: Path | None = None) -> list[str]:
    done = sh(*cmd, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


@BOTH
def test_cp_r_out_of_the_mount_gives_the_same_tree(archive: Archive, scratch: Path) -> None:
    copy = scratch / "copy"
    with archive.mount(scratch) as m:
        done = sh("cp", "-r", in_mount(m), copy)
        assert done.returncode == 0, done.stderr
        assert mount_stats(m.path)["errors"] == 0
    done = sh("diff", "-r", "--no-dereference", archive.tree, copy)
    assert done.returncode == 0, done.stdout[:2000]


FIND = r"%P\t%y\t%s\t%m\t%T@\t%l\n"
STAT = "%f|%s|%.9Y"  # raw mode (type and permissions) in hex, size, mtime
KIND = {Kind.FILE: "f", Kind.DIR: "d", Kind.SYMLINK: "l"}


def find(root: Path) -> dict[str, list[str]]:
    """Path -> [type, size, mode, mtime, link target] of everything below root."""
    found = {}
    for line in lines("find", root, "-mindepth", "1", "-printf", FIND):
        path, *fields = line.split("\t")
        found[path] = fields
    return found


def ls_lr(root: Path) -> list[str]:
    """`ls -lRn` of root, from root, with full timestamps; block totals and directory sizes
    left out (the manifest, so the mount, gives directories size 0) and spaces squeezed."""
    out = []
    for line in lines("ls", "-lRn", "--time-style=full-iso", ".", cwd=root):
        if line.startswith("total "):
            continue
        fields = line.split(maxsplit=8)
        if line.startswith("d"):
            fields[4] = "-"
        out.append(" ".join(fields))
    return out


@BOTH
def test_find_ls_and_stat_show_the_manifest(archive: Archive, scratch: Path) -> None:
    entries = {e.path: e for e in archive.manifest.entries}
    with archive.mount(scratch) as m:
        root = in_mount(m)
        seen = find(root)
        assert set(seen) == set(entries)
        for path, e in entries.items():
            size = len(e.target or "") if e.kind is Kind.SYMLINK else e.size
            mtime = int(Decimal(seen[path][3]) * 10**9)
            assert seen[path][:3] == [KIND[e.kind], str(size), f"{e.mode:o}"], path
            assert (mtime, seen[path][4]) == (e.mtime_ns, e.target or ""), path
        original = find(archive.tree)
        for path, (kind, size_s, *rest) in original.items():
            assert seen[path] == [kind, "0" if kind == "d" else size_s, *rest], path
        assert ls_lr(root) == ls_lr(archive.tree)
        for rel in (BIG_FILE, "corpus/empty", "corpus/131073", "nested/link-to-text", "nested"):
            e = entries[rel]
            size = len(e.target or "") if e.kind is Kind.SYMLINK else e.size
            mode, got_size, got_mtime = lines("stat", "-c", STAT, root / rel)[0].split("|")
            assert (int(mode, 16), int(got_size)) == (e.st_mode, size), rel
            assert Decimal(got_mtime) * 10**9 == e.mtime_ns, rel


RANDOM_READER = """
import os, random, sys
mount, tree, big, seed, count = sys.argv[1], sys.argv[2], sys.argv[3], *map(int, sys.argv[4:])
sizes = {}
for top, _, names in os.walk(tree):
    for name in names:
        path = os.path.join(top, name)
        if not os.path.islink(path):
            sizes[os.path.relpath(path, tree)] = os.path.getsize(path)
small = sorted(p for p in sizes if p != big)
lengths = [1, 100, 4096, 65536, 131072, 200_000, 1 << 20]
rng = random.Random(seed)
fds = {}
for n in range(count):
    rel = big if rng.random() < 0.5 else rng.choice(small)
    if rel not in fds:
        fds[rel] = [os.open(os.path.join(top, rel), os.O_RDONLY) for top in (mount, tree)]
    offset, length = rng.randrange(sizes[rel] + 4096), rng.choice(lengths)
    got = os.pread(fds[rel][0], length, offset)
    if got != os.pread(fds[rel][1], length, offset):
        sys.exit(f"read {n}: {rel} at {offset}+{length} gave {len(got)} other bytes")
print(count)
"""
READERS, READS = 4, 750


@BOTH
def test_thousands_of_random_reads_in_parallel_match(archive: Archive, scratch: Path) -> None:
    """READERS processes, each with its own open files, READS preads each: half of them in
    the 1 GiB file, at random offsets (some past the end) and of random lengths."""
    cmd = [sys.executable, "-c", RANDOM_READER]
    with archive.mount(scratch) as m:
        args = [str(in_mount(m)), str(archive.tree), BIG_FILE]
        with running(*([*cmd, *args, str(seed), str(READS)] for seed in range(READERS))) as procs:
            for proc in procs:
                out, err = proc.communicate(timeout=TIMEOUT)
                assert proc.returncode == 0 and out == f"{READS}\n", err
        stats = mount_stats(m.path)
        assert stats["errors"] == 0 and stats["reads"] > READS


def check_reads(archive: Archive, m: Mounted, spans: list[tuple[str, int, int]]) -> None:
    """Each (file, offset, length) reads through the mount as in the original."""
    for rel, offset, length in spans:
        got = pread_in_child(in_mount(m, rel), offset, length)
        assert got == archive.original(rel, offset, length), (rel, offset, length, got)


@SERVER_ONLY
def test_server_outage_cached_reads_go_on_others_fail_until_it_is_back(
    archive: Archive, scratch: Path
) -> None:
    """With the server stopped, what the mount cached still reads (after a remount too),
    the rest fails with EIO while listings and stats answer; once it is back at the same
    URL, those reads work with no remount."""
    server = archive.server
    assert server is not None
    files = archive.manifest.files
    small = next(e.path for e in files if e.path.startswith("nested/") and e.size > 9000)
    warm = [(BIG_FILE, 0, 8 * MIB), ("corpus/random-5MiB", 0, 5 * MIB), (small, 0, MIB)]
    cold, colder = (BIG_FILE, 600 * MIB, MIB), (BIG_FILE, 800 * MIB, MIB)
    try:
        with archive.mount(scratch) as m:
            check_reads(archive, m, warm)
            wait_for_cache_writes(m.path)
            server.stop()
            for rel, _, _ in warm:
                drop_page_cache(in_mount(m, rel))
            reads = mount_stats(m.path)["reads"]
            check_reads(archive, m, warm)
            assert mount_stats(m.path)["reads"] > reads  # served by the mount, not the kernel
            assert pread_in_child(in_mount(m, cold[0]), *cold[1:]) == errno.EIO
            assert sorted(os.listdir(in_mount(m))) == ["big", "corpus", "nested"]
            assert os.stat(in_mount(m, BIG_FILE)).st_size == GIB
            assert len(lines("ls", "-lR", in_mount(m))) > len(archive.manifest.entries)
            server.start()  # at the same URL and with the same key: no remount needed
            assert pread_once_back(in_mount(m, cold[0]), *cold[1:]) == archive.original(*cold)
        server.stop()
        with archive.mount(scratch) as m:  # a remount with the server down: cache only
            assert "unreachable" in m.stderr
            check_reads(archive, m, warm)
            stats = mount_stats(m.path)
            assert stats["fetches"] == stats["maps_loaded"] == 0
            assert stats["maps_from_disk"] == len(warm)
            assert pread_in_child(in_mount(m, colder[0]), *colder[1:]) == errno.EIO
            assert os.listdir(in_mount(m, "corpus"))
            server.start()
            got = pread_once_back(in_mount(m, colder[0]), *colder[1:])
            assert got == archive.original(*colder)
    finally:
        if server.proc is None:
            server.start()


def plan(server: Server, file_hash: bytes, start: int, end: int) -> Reconstruction:
    """The server's reconstruction of bytes [start, end) of a file."""
    resp = httpx.get(
        f"{server.url}/v1/reconstructions/{hash_to_string(file_hash)}",
        headers={"Range": f"bytes={start}-{end - 1}", "Authorization": "Bearer reader"},
        timeout=60,
    )
    resp.raise_for_status()
    return Reconstruction.from_json(resp.json())


def packed(rec: Reconstruction) -> int:
    """Bytes of xorb data a reconstruction's fetch ranges span."""
    return sum(fr.byte_end - fr.byte_start + 1 for frs in rec.fetch.values() for fr in frs)


@SERVER_ONLY
def test_read_amplification_counted_by_the_server(archive: Archive, scratch: Path) -> None:
    """A cold 1 MiB read in the middle of the 1 GiB file fetches the chunks that hold it:
    at most 1 MiB plus the two chunks it starts and ends in (and their 8-byte headers).
    The first read of a file also maps it (a reconstruction of the whole file, metadata
    only, that carries each xorb's footer); after a remount the map comes from the disk cache, and
    a read of missing chunks asks for a reconstruction of just their bytes."""
    server = archive.server
    assert server is not None
    entry = archive.manifest.entry(BIG_FILE)
    assert entry is not None and entry.xet_hash is not None
    for offset, fresh in ((512 * MIB, True), (256 * MIB, False)):
        with archive.mount(scratch) as m:
            before = server.stats("reader")
            got = pread_in_child(in_mount(m, BIG_FILE), offset, MIB)
            after = server.stats("reader")
            assert got == archive.original(BIG_FILE, offset, MIB)
            d = {k: after[k] - before[k] for k in after}
            stats = mount_stats(m.path)
        rec = plan(server, entry.xet_hash, offset, offset + MIB)
        assert d["xorb_bytes_served"] == packed(rec) == stats["bytes_fetched"]
        bound = MIB + 2 * MAX_CHUNK_SIZE + CHUNK_HEADER_SIZE * stats["cache_misses"]
        assert d["xorb_bytes_served"] <= bound
        assert d["xorb_requests"] == len(rec.fetch) and stats["prefetched_bytes"] == 0
        if fresh:
            xorbs = len(plan(server, entry.xet_hash, 0, GIB).fetch)
            assert d["reconstructions"] == 1 and d["reconstruction_bytes"] == GIB
            # the reconstruction carried every xorb's footer (the arkfs extension)
            assert d["footer_requests"] == 0 and stats["footers_sent"] == xorbs
        else:
            assert d["footer_requests"] == 0
            assert 1 <= d["reconstructions"] <= len(rec.fetch)
            assert d["reconstruction_bytes"] <= MIB + 2 * MAX_CHUNK_SIZE


BLOCKED_READER = """
import hashlib, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
print("reading", flush=True)
try:
    data = os.pread(fd, int(sys.argv[3]), int(sys.argv[2]))
except OSError as exc:
    sys.exit(f"errno {exc.errno}")
print(hashlib.sha256(data).hexdigest(), flush=True)
"""
SPANS = [(100 * MIB, MIB), (300 * MIB, MIB), (700 * MIB + 12345, MIB)]


@contextmanager
def readers_blocked(archive: Archive, m: Mounted) -> Iterator[list[subprocess.Popen[str]]]:
    """Reader processes of SPANS of the 1 GiB file, each blocked in a read of data the mount
    has not cached: the server is frozen (SIGSTOP) until the context ends (SIGCONT)."""
    server = archive.server
    assert server is not None
    big = in_mount(m, BIG_FILE)
    assert pread_in_child(big, 0, 4096) == archive.original(BIG_FILE, 0, 4096)  # map loaded
    reads = mount_stats(m.path)["reads"]
    server.signal(signal.SIGSTOP)
    try:
        cmds = [[sys.executable, "-c", BLOCKED_READER, str(big), str(o), str(n)] for o, n in SPANS]
        with running(*cmds) as procs:
            for proc in procs:
                assert proc.stdout is not None and proc.stdout.readline() == "reading\n"
            deadline = time.monotonic() + TIMEOUT
            while mount_stats(m.path)["reads"] < reads + len(SPANS):
                assert time.monotonic() < deadline, "the reads never reached the mount"
                time.sleep(0.05)
            assert mount_stats(m.path)["inflight_chunks"] > 0
            assert all(proc.poll() is None for proc in procs)
            yield procs
    finally:
        server.signal(signal.SIGCONT)


def digests(archive: Archive) -> list[str]:
    """What BLOCKED_READER prints for each of SPANS when it reads the right bytes."""
    return [hashlib.sha256(archive.original(BIG_FILE, o, n)).hexdigest() + "\n" for o, n in SPANS]


@SERVER_ONLY
def test_umount_with_readers_blocked_in_uncached_reads(archive: Archive, scratch: Path) -> None:
    """`arkfs umount` returns at once (a lazy detach); the readers get their bytes when the
    server wakes up; then the daemon writes what they fetched to its cache, and exits."""
    server = archive.server
    assert server is not None
    with archive.mount(scratch) as m:
        with readers_blocked(archive, m) as procs:
            done = run_arkfs("umount", str(m.path), timeout=TIMEOUT)
            assert done.returncode == 0 and "lazily" in done.stderr, done.stderr
            assert not is_mounted(m.path)
            server.signal(signal.SIGCONT)
            outs = [proc.communicate(timeout=TIMEOUT) for proc in procs]
        assert [out for out, _ in outs] == digests(archive), outs
        assert wait_gone(m.pid)
    server.stop()
    try:
        with archive.mount(scratch) as m:  # offline: the bytes come from the disk cache
            check_reads(archive, m, [(BIG_FILE, o, n) for o, n in SPANS])
            assert mount_stats(m.path)["fetches"] == 0
    finally:
        server.start()


@SERVER_ONLY
def test_sigterm_with_readers_blocked_ends_the_mount(archive: Archive, scratch: Path) -> None:
    """SIGTERM ends the mount even with reads stuck on a frozen server: they are cancelled
    after the grace time and fail; the daemon exits and the mountpoint is free."""
    with archive.mount(scratch) as m:
        with readers_blocked(archive, m) as procs:
            os.kill(m.pid, signal.SIGTERM)
            assert wait_gone(m.pid, timeout=TIMEOUT)
            assert not is_mounted(m.path)
            outs = [proc.communicate(timeout=TIMEOUT) for proc in procs]
        failed = {f"errno {errno.EIO}", f"errno {errno.ENOTCONN}", f"errno {errno.ECONNABORTED}"}
        assert all(err.strip() in failed for _, err in outs), outs
        log = m.log.read_text()
        assert "SIGTERM: unmounting" in log and "cancelling them" in log


PARALLEL_READER = """
import os, sys
from concurrent.futures import ThreadPoolExecutor
fd = os.open(sys.argv[1], os.O_RDONLY)
spans = [tuple(map(int, a.split("+"))) for a in sys.argv[2:]]
with ThreadPoolExecutor(len(spans)) as pool:
    got = list(pool.map(lambda s: len(os.pread(fd, s[1], s[0])), spans))
assert got == [n for _, n in spans], got
"""


@BOTH
def test_unmount_right_after_reads_keeps_what_they_fetched(archive: Archive, scratch: Path) -> None:
    """The daemon lets its cache writes finish before it exits: once it is gone, the disk
    cache holds the file's map and every chunk of 32 reads that ended just before the
    unmount (32 groups of chunks to write, far more than the writer threads)."""
    spans = [(k * 31 * MIB + 4096, MIB) for k in range(32)]
    entry = archive.manifest.entry(BIG_FILE)
    assert entry is not None and entry.xet_hash is not None
    with archive.mount(scratch) as m:
        args = [str(in_mount(m, BIG_FILE)), *(f"{o}+{n}" for o, n in spans)]
        lines(sys.executable, "-c", PARALLEL_READER, *args)
        lines("fusermount3", "-u", m.path)  # at once: writes are still under way
        assert wait_gone(m.pid)
    cache = ChunkCache(scratch / "cache", 1 << 40)
    cache.scan()
    fmap = cache.get_map(entry.xet_hash)
    assert fmap is not None
    read = [i for o, n in spans for i in range(*fmap.span(o, o + n))]
    missing = [i for i in read if not cache.has(fmap.chunk_hash(i))]
    assert not missing, f"{len(missing)} of the {len(read)} chunks read are not in the cache"
