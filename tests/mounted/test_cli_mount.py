"""`arkfs mount`, `umount` and `stats` as commands: refusals, signals, busy unmounts,
tokens, an offline remount from the manifest cache, and damage in the store or the cache,
through the embedded store and through `arkfs serve`."""

import errno
import os
import random
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from arkfs.mount.backends import MountError
from arkfs.mount.daemon import check_fuse
from arkfs.util.sizes import parse_size
from tests.support.archive import make_tree, publish
from tests.support.cli import ARKFS, run_arkfs
from tests.support.mount import (
    Mounted,
    arkfs_mount,
    cleanup,
    is_mounted,
    mount_stats,
    wait_gone,
)
from tests.support.server import arkfs_server

ARK = "ark:12345/x6np1wh8k"
TOKENS = "writer write\nreader read\n"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An embedded store holding ARK."""
    base = tmp_path_factory.mktemp("cli-mount")
    publish(make_tree(base / "tree"), ARK, "--store", str(base / "store"))
    return base / "store"


@pytest.fixture
def mount(store: Path, tmp_path: Path) -> Iterator[Mounted]:
    with arkfs_mount(
        tmp_path / "mnt", "--store", str(store), "--cache-dir", str(tmp_path / "cache")
    ) as m:
        yield m


def refused(done: subprocess.CompletedProcess[str], words: str) -> None:
    """An exit status 2 with one line on stderr that says words."""
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and words in done.stderr, done.stderr


def test_mount_refuses_missing_and_non_empty_mountpoints(store: Path, tmp_path: Path) -> None:
    refused(run_arkfs("mount", str(tmp_path / "missing"), "--store", str(store)), "does not exist")
    full = tmp_path / "full"
    full.mkdir()
    (full / "x").write_text("x")
    refused(run_arkfs("mount", str(full), "--store", str(store)), "is not empty")
    (tmp_path / "file").write_text("x")
    refused(run_arkfs("mount", str(tmp_path / "file"), "--store", str(store)), "not a directory")


def test_mount_refuses_bad_options(store: Path, tmp_path: Path) -> None:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    cache = ("--cache-dir", str(tmp_path / "cache"))
    refused(
        run_arkfs("mount", str(mnt), "--store", str(tmp_path / "none"), *cache), "no arkfs store"
    )
    refused(run_arkfs("mount", str(mnt), "--cache-size", "lots"), "size 'lots'")
    refused(run_arkfs("mount", str(mnt), "--server", "ftp://x"), "not an http")
    config = tmp_path / "config.toml"
    config.write_text('[naans]\n"12-3.4" = "http://127.0.0.1:1"\n')
    refused(run_arkfs("mount", str(mnt), "--config", str(config)), "NAAN")
    refused(run_arkfs("mount", str(mnt), "--metadata-ttl", "-1"), "--metadata-ttl -1")
    config.write_text("metadata_ttl = 'soon'\n")
    refused(run_arkfs("mount", str(mnt), "--config", str(config)), "metadata_ttl must be")
    assert not is_mounted(mnt)


def test_mount_refuses_without_fuse(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os.path, "exists", lambda p: p != "/dev/fuse")
    with pytest.raises(MountError, match="/dev/fuse is missing") as caught:
        check_fuse()
    assert caught.value.usage


def test_sigterm_unmounts_cleanly_and_a_busy_mountpoint_is_refused(
    mount: Mounted, store: Path
) -> None:
    assert os.listdir(mount.path) == ["ark:12345"]
    refused(run_arkfs("mount", str(mount.path), "--store", str(store)), "already a mountpoint")
    os.kill(mount.pid, signal.SIGTERM)
    assert wait_gone(mount.pid)
    assert not is_mounted(mount.path)
    assert "SIGTERM: unmounting" in mount.log.read_text()


def test_foreground_mount_stops_on_sigint(store: Path, tmp_path: Path) -> None:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    with open(tmp_path / "stderr", "w+") as err:
        proc = subprocess.Popen(
            [ARKFS, "mount", str(mnt), "--store", str(store), "--cache-dir", str(tmp_path), "-f"],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
        try:
            assert proc.stdout is not None
            assert proc.stdout.readline().startswith("arkfs: mounted"), err.read()
            assert os.listdir(mnt / "ark:12345") == ["x6np1wh8k"]
            proc.send_signal(signal.SIGINT)
            assert proc.wait(timeout=30) == 0
            assert not is_mounted(mnt)
        finally:
            proc.kill()
            proc.wait()
            proc.stdout.close()  # type: ignore[union-attr]
            cleanup(mnt, None)


READER = """
import sys
with open(sys.argv[1], "rb") as f:
    first = f.read(4096)
    print("open", flush=True)
    sys.stdin.read()
    sys.stdout.write(str(len(first) + len(f.read())))
"""


def test_umount_with_a_reader_in_flight_detaches_lazily(mount: Mounted) -> None:
    big = mount.path / "ark:12345/x6np1wh8k/data/big.bin"
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(big)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert reader.stdout is not None and reader.stdout.readline() == "open\n"
        done = run_arkfs("umount", str(mount.path), timeout=60)
        assert done.returncode == 0 and "lazily" in done.stderr, done.stderr
        assert not is_mounted(mount.path)
        out, _ = reader.communicate("", timeout=60)
        assert int(out) == 3 * 1024 * 1024 + 12345  # the open file still reads to its end
        assert wait_gone(mount.pid)
    finally:
        reader.kill()
        reader.wait()


def test_umount_and_stats_of_what_is_not_an_arkfs_mount(mount: Mounted, tmp_path: Path) -> None:
    done = run_arkfs("umount", str(mount.path))
    assert done.returncode == 0, done.stderr
    assert wait_gone(mount.pid)
    refused(run_arkfs("umount", str(mount.path)), "is not mounted")
    refused(run_arkfs("umount", "/proc"), "not arkfs")
    refused(run_arkfs("stats", str(tmp_path)), "not an arkfs mount")


def test_stats_for_prometheus_counts_what_was_read(mount: Mounted, store: Path) -> None:
    """`arkfs stats --prometheus` parses as the text format, and counts the bytes read."""
    data = (mount.path / ARK / "data/big.bin").read_bytes()
    data += (mount.path / ARK / "readme.txt").read_bytes()
    done = run_arkfs("stats", str(mount.path), "--prometheus")
    assert done.returncode == 0, done.stderr
    families = {f.name: f for f in text_string_to_metric_families(done.stdout)}
    read = families["arkfs_mount_bytes_read"]
    assert read.type == "counter" and read.documentation
    [sample] = read.samples
    assert sample.name == "arkfs_mount_bytes_read_total"
    assert sample.labels == {"mountpoint": str(mount.path.resolve())}
    assert sample.value == len(data)
    assert families["arkfs_mount_cache_limit"].type == "gauge"
    assert all(name.startswith("arkfs_mount_") for name in families)
    assert all(f.documentation and len(f.samples) == 1 for f in families.values())
    assert "arkfs_mount_pid" not in families
    assert families["arkfs_mount_reads"].samples[0].value == mount_stats(mount.path)["reads"]
    both = run_arkfs("stats", str(mount.path), "--json", "--prometheus")
    assert both.returncode == 2 and "not allowed with" in both.stderr


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """`arkfs serve` that wants a token for reads too, holding ARK."""
    (tmp_path / "tokens").write_text(TOKENS)
    with arkfs_server(tmp_path / "store", "--tokens", str(tmp_path / "tokens")) as (url, proc):
        publish(make_tree(tmp_path / "tree"), ARK, "--server", url, "--token", "writer")
        yield url, proc


def test_a_missing_or_rejected_token_fails_the_mount(
    server: tuple[str, subprocess.Popen[str]], tmp_path: Path
) -> None:
    url, _ = server
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    cache = str(tmp_path / "cache")
    env = {k: v for k, v in os.environ.items() if k != "ARKFS_TOKEN"}
    for token in ((), ("--token", "wrong")):
        done = subprocess.run(
            [ARKFS, "mount", str(mnt), "--server", url, "--cache-dir", cache, *token],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
        refused(done, "token")
        assert "wrong" not in done.stderr
        assert not is_mounted(mnt)
    with arkfs_mount(mnt, "--server", url, "--cache-dir", cache, "--token", "reader") as m:
        assert os.listdir(m.path / "ark:12345/x6np1wh8k/c3") == ["deep", "s5.v7.xsl"]
        assert "reader" not in m.log.read_text()


def tree_of(root: Path) -> dict[str, tuple[int, int]]:
    """Relative path -> (size, mode) of everything below root, not following symlinks."""
    out = {}
    for path in sorted(root.rglob("*")):
        st = path.lstat()
        out[str(path.relative_to(root))] = (st.st_size, st.st_mode)
    return out


def test_remount_with_the_server_down_lists_from_the_cache(tmp_path: Path) -> None:
    (tmp_path / "tokens").write_text(TOKENS)
    cache = str(tmp_path / "cache")
    mnt = tmp_path / "mnt"
    with arkfs_server(tmp_path / "store", "--tokens", str(tmp_path / "tokens"), "--open-read") as (
        url,
        _,
    ):
        publish(make_tree(tmp_path / "tree"), ARK, "--server", url, "--token", "writer")
        with arkfs_mount(mnt, "--server", url, "--cache-dir", cache) as m:
            online = tree_of(m.path)
            info = (m.path / "ark:12345/x6np1wh8k?info").read_text()
    assert "ark:12345/x6np1wh8k/c3/s5.v7.xsl" in online
    with arkfs_mount(mnt, "--server", url, "--cache-dir", cache) as m:
        assert "unreachable" in m.stderr
        assert tree_of(m.path) == online
        assert (m.path / "ark:12345/x6np1wh8k?info").read_text() == info


@contextmanager
def mounted(kind: str, store: Path, tmp_path: Path) -> Iterator[Mounted]:
    """A mount of an embedded store with its cache in tmp_path/cache: directly (--store),
    or through `arkfs serve` (--server)."""
    cache = ("--cache-dir", str(tmp_path / "cache"))
    if kind == "store":
        with arkfs_mount(tmp_path / "mnt", "--store", str(store), *cache) as m:
            yield m
        return
    with (
        arkfs_server(store, "--open-read") as (url, _),
        arkfs_mount(tmp_path / "mnt", "--server", url, *cache) as m,
    ):
        yield m


def flip_byte(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x01
    path.write_bytes(bytes(data))


def published_file(tmp_path: Path, seed: int) -> tuple[Path, bytes]:
    """A store holding ARK: one 1 MB file (about 16 chunks), data.bin; the store and data."""
    data = random.Random(seed).randbytes(1_000_000)
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree/data.bin").write_bytes(data)
    publish(tmp_path / "tree", ARK, "--store", str(tmp_path / "store"))
    return tmp_path / "store", data


BLOCK = 64 * 1024


@pytest.mark.parametrize("kind", ["store", "server"])
def test_a_flipped_byte_in_a_stored_xorb_gives_eio_and_one_log_line(
    kind: str, tmp_path: Path
) -> None:
    store, data = published_file(tmp_path, 9)
    (xorb,) = (p for p in (store / "xorbs").rglob("*") if p.is_file())
    flip_byte(xorb, xorb.stat().st_size // 3)  # in the data of a chunk
    with mounted(kind, store, tmp_path) as m:
        path = m.path / ARK / "data.bin"
        done = subprocess.run(["cat", str(path)], capture_output=True, check=False, timeout=120)
        assert done.returncode != 0 and b"Input/output error" in done.stderr
        failed = 0
        with open(path, "rb") as f:
            for offset in range(0, len(data), BLOCK):
                try:
                    got = os.pread(f.fileno(), BLOCK, offset)
                except OSError as exc:
                    assert exc.errno == errno.EIO
                    failed += 1
                else:  # all of it, or what precedes the damage: never the flipped byte
                    assert got and got == data[offset : offset + len(got)]
        assert 0 < failed < len(data) // BLOCK  # the chunks around the damage still read
        assert os.listdir(m.path / ARK) == ["data.bin"]  # still serving
        errors = [line for line in m.log.read_text().splitlines() if " ERROR " in line]
        assert len(errors) == mount_stats(m.path)["errors"]  # one line per failed read
        assert all("ark:12345/x6np1wh8k/data%2Ebin" in line for line in errors)
        assert all("fails verification" in line for line in errors)


@pytest.mark.parametrize("kind", ["store", "server"])
def test_a_flipped_byte_in_the_cache_is_fetched_again(kind: str, tmp_path: Path) -> None:
    store, data = published_file(tmp_path, 10)
    cache = tmp_path / "cache"
    with mounted(kind, store, tmp_path) as m:
        assert (m.path / ARK / "data.bin").read_bytes() == data
    # The unmount waited for the cache writes: the chunks' packs and the file's map are there.
    packs = sorted((cache / "packs").glob("*/*"))
    (fmap,) = (cache / "maps").glob("*/*")
    assert packs
    flip_byte(packs[0], packs[0].stat().st_size - 100)  # in the pack's last chunk
    with mounted(kind, store, tmp_path) as m:
        assert (m.path / ARK / "data.bin").read_bytes() == data
        stats = mount_stats(m.path)
        assert stats["cache_bad_files"] == 1 and stats["fetches"] == 1
        assert stats["maps_from_disk"] == 1 and stats["maps_loaded"] == 0
        assert stats["url_refreshes"] == 1  # a reconstruction of just that pack's bytes
    flip_byte(fmap, fmap.stat().st_size // 2)
    with mounted(kind, store, tmp_path) as m:
        assert (m.path / ARK / "data.bin").read_bytes() == data
        stats = mount_stats(m.path)
        assert stats["cache_bad_files"] == 1 and stats["fetches"] == 0
        assert stats["maps_from_disk"] == 0 and stats["maps_loaded"] == 1  # built again
    warnings = [line for line in m.log.read_text().splitlines() if " WARNING " in line]
    assert len(warnings) == 2, warnings  # each bad file, once
    assert "not a valid file map" in warnings[1] and packs[0].name in warnings[0]


def test_sizes_read_as_people_write_them() -> None:
    assert parse_size("10G") == 10 << 30
    assert parse_size("512M") == 512 << 20
    assert parse_size("1.5GiB") == 3 << 29
    assert parse_size("1000000") == 1_000_000
