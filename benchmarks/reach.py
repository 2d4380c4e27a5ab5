"""Reach without FUSE: `arkfs get` of the big random file, cold, against hf_xet's download
to a file, each timed as a whole process (start-up and imports included); and a
sequential read through the `ark://` fsspec filesystem, cold, against the mount's cold
read of the same file; and, for information, `arkfs get` of 1,000 small files against
`curl ?tar | tar -x` of their directory, and `cp -r` of it out of a fresh mount against
that get. Each side runs in a new process with an empty chunk cache and a dropped page
cache. arkfs's modules are byte-compiled first, as a wheel install compiles them
(hf_xet's were, by pip): an editable install run with PYTHONDONTWRITEBYTECODE would
otherwise compile every module at each `arkfs get`."""

import compileall
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import arkfs
from benchmarks.common import (
    ARKFS,
    SEQUENTIAL,
    Failed,
    Figure,
    Result,
    compare,
    interleaved,
    read_seconds,
    value,
)
from benchmarks.mountbench import (
    BIG_ARK,
    HERE,
    READ_TOKEN,
    TREE_ARK,
    Archive,
    _cold,
    _hf_xet_file,
)

SMALL = "d0/d0"  # 1,000 files of 1-64 KiB of the small-file tree (corpora.tree_layout)


def _ark_path(archive: Archive, local: Path) -> str:
    """ark:NAAN/Name/PATH of a big file of the corpora."""
    return f"{BIG_ARK}/{local.relative_to(archive.corpora.big).as_posix()}"


def _get(archive: Archive, ark: str, truth: Path, name: str) -> float:
    """Seconds `arkfs get` took to download ark (truth's published copy: a file or a
    directory) to scratch/name, cache empty."""
    dest, cache = archive.scratch / name, archive.scratch / f"{name}-cache"
    shutil.rmtree(cache, ignore_errors=True)
    started = time.perf_counter()
    subprocess.run(
        [
            *(ARKFS, "get", ark, str(dest), "-q"),
            *("--server", archive.server.url, "--cache-dir", str(cache)),
        ],
        env=os.environ | {"ARKFS_TOKEN": READ_TOKEN},
        check=True,
        timeout=600,
    )
    seconds = time.perf_counter() - started
    try:
        _same_files(dest, truth, "arkfs get")
        return seconds
    finally:
        if dest.is_dir():
            shutil.rmtree(dest, ignore_errors=True)
        else:
            dest.unlink(missing_ok=True)
        shutil.rmtree(cache, ignore_errors=True)


def _tar_small(archive: Archive) -> float:
    """Seconds curl took to GET the SMALL directory as one tar (?tar) and tar to unpack it."""
    dest = archive.scratch / "tar-small"
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir()
    url = f"{archive.server.url}/{TREE_ARK}/{SMALL}?tar"
    curl = ["curl", "-sSf", "-H", f"Authorization: Bearer {READ_TOKEN}", url]
    started = time.perf_counter()
    with subprocess.Popen(curl, stdout=subprocess.PIPE) as fetch:
        unpack = subprocess.run(["tar", "-x", "-C", str(dest)], stdin=fetch.stdout, timeout=600)
    seconds = time.perf_counter() - started
    try:
        if fetch.returncode or unpack.returncode:
            raise RuntimeError(f"curl ?tar | tar -x: exit {fetch.returncode}, {unpack.returncode}")
        _same_files(dest / SMALL.rpartition("/")[2], archive.corpora.tree / SMALL, "?tar")
        return seconds
    finally:
        shutil.rmtree(dest, ignore_errors=True)


def _cp_small(archive: Archive) -> float:
    """Seconds `cp -r` of the SMALL directory took out of a fresh mount, cache empty (the
    mount's start not counted)."""
    dest = archive.scratch / "cp-small"
    shutil.rmtree(dest, ignore_errors=True)
    with archive.mount("cp-cache") as mount:
        source = mount.path / TREE_ARK / SMALL
        started = time.perf_counter()
        subprocess.run(["cp", "-r", str(source), str(dest)], check=True, timeout=600)
        seconds = time.perf_counter() - started
    try:
        _same_files(dest, archive.corpora.tree / SMALL, "cp -r")
        return seconds
    finally:
        shutil.rmtree(dest, ignore_errors=True)


def _same_files(got: Path, truth: Path, who: str) -> None:
    """Raise unless got holds what truth holds (a file, or a directory's files), with the
    same sizes."""

    def files(root: Path) -> dict[Path, int]:
        if root.is_file():
            return {Path(): root.stat().st_size}
        return {p.relative_to(root): p.stat().st_size for p in root.rglob("*") if p.is_file()}

    have, want = files(got), files(truth)
    if have != want:
        size = sum(have.values())
        raise RuntimeError(f"{who} wrote {len(have)} files of {size} bytes, not {truth}'s")


def _fsspec(archive: Archive, local: Path) -> float:
    """Seconds a sequential read through ark:// took in a new process, cache empty."""
    cache = archive.scratch / "fsspec-cache"
    shutil.rmtree(cache, ignore_errors=True)
    try:
        out = subprocess.run(
            [
                *(sys.executable, str(HERE / "fsspec_read.py"), archive.server.url, str(cache)),
                *(_ark_path(archive, local), str(local.stat().st_size)),
            ],
            env=os.environ | {"ARKFS_TOKEN": READ_TOKEN},
            capture_output=True,
            text=True,
            check=True,
            timeout=600,
        )
        return float(out.stdout)
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def _mount_read(archive: Archive, local: Path) -> float:
    """Seconds a fresh mount took to read local's published copy, cache empty."""
    with archive.mount("reach-cache") as mount:
        path = archive.in_mount(mount, local)
        path.stat()  # the lookups are not part of the read
        return read_seconds(path)


def bench_reach(archive: Archive, local: Path) -> list[Figure]:
    """`arkfs get` against hf_xet to a file (>= 1.0) and, for information, against hf_xet's
    download fsynced, as get's file is; fsspec against the mount (>= 0.8)."""
    size = local.stat().st_size
    small = sum(p.stat().st_size for p in (archive.corpora.tree / SMALL).rglob("*.bin"))
    compileall.compile_dir(Path(arkfs.__file__).parent, quiet=1)
    disk = archive.scratch  # where both downloads go: what its disk wrote, per side
    got = interleaved(
        {
            "get": _cold(
                lambda: _get(archive, _ark_path(archive, local), local, "get"), size, disk
            ),
            "hf_xet file": _cold(lambda: _hf_xet_file(archive, local, whole=True), size, disk),
            "hf_xet durable": _cold(
                lambda: _hf_xet_file(archive, local, whole=True, durable=True), size, disk
            ),
            "fsspec": _cold(lambda: _fsspec(archive, local), size),
            "mount": _cold(lambda: _mount_read(archive, local), size),
            "get small": _cold(
                lambda: _get(
                    archive, f"{TREE_ARK}/{SMALL}", archive.corpora.tree / SMALL, "get-small"
                ),
                small,
            ),
            "tar small": _cold(lambda: _tar_small(archive), small),
            "cp small": _cold(lambda: _cp_small(archive), small),
        }
    )
    label = f"{size / 2**20:.0f} MiB random"
    written = ", ".join(
        f"{side} {_disk_mb(got[side])}" for side in ("get", "hf_xet file", "hf_xet durable")
    )
    return [
        compare(
            f"arkfs get, cold, {label}",
            "MB/s",
            value(got["get"], "mbps"),
            value(got["hf_xet file"], "mbps"),
            "hf_xet download to a file",
            ">= 1.0",
            SEQUENTIAL,
            note="whole commands, each a new process: start-up and imports, resolve (arkfs), "
            "reconstruction, fetch, verification (arkfs: every chunk hash; hf_xet checks "
            "none), write (arkfs: the file fsynced and the chunk cache filled; hf_xet: the "
            f"page cache). Written to the disk while each ran, median: {written}",
        ),
        compare(
            f"arkfs get, cold, {label}, against a durable hf_xet download",
            "MB/s",
            value(got["get"], "mbps"),
            value(got["hf_xet durable"], "mbps"),
            "hf_xet download to a file, then fsync",
            None,
            SEQUENTIAL,
            note="for information: both files are on the disk when the clock stops",
        ),
        compare(
            "arkfs get, cold, 1,000 small files (1-64 KiB)",
            "MB/s",
            value(got["get small"], "mbps"),
            value(got["tar small"], "mbps"),
            "curl ?tar, piped to tar -x",
            None,
            SEQUENTIAL,
            note="for information: get asks for the files' reconstructions a hundred to a "
            "request and for their bytes several files to a xorb range, then writes each "
            "file (synced, renamed); ?tar sends the directory in one, from the server's "
            "read path",
        ),
        compare(
            "cp -r out of a cold mount, 1,000 small files (1-64 KiB)",
            "MB/s",
            value(got["cp small"], "mbps"),
            value(got["get small"], "mbps"),
            "arkfs get of the same directory",
            None,
            SEQUENTIAL,
            note="for information: a scan of a directory (files opened in name order) "
            "preloads the next files' maps a hundred to a request, as get does; the "
            "mount's start is not counted, get's whole process is",
        ),
        compare(
            f"fsspec ark:// sequential read, cold, {label}",
            "MB/s",
            value(got["fsspec"], "mbps"),
            value(got["mount"], "mbps"),
            "mount, cold sequential read",
            ">= 0.8",
            SEQUENTIAL,
        ),
    ]


def _disk_mb(result: Result) -> str:
    """A side's median disk_mb in words ("1074 MB"), or "not measured"."""
    if isinstance(result, Failed) or "disk_mb" not in result:
        return "not measured"
    return f"{result['disk_mb']:.0f} MB"
