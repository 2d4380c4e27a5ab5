"""arkfs deployed as a site deploys it: `make install-system`, `mount -t fuse.arkfs` through
mount.fuse3, an fstab line, shared mounts read by another user (nobody, via setpriv), and
what df and mount show."""

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.archive import make_tree, publish
from tests.support.cli import run_arkfs
from tests.support.mount import arkfs_mount, cleanup, is_mounted

ARK = "ark:12345/x6np1wh8k"
REPO = Path(__file__).resolve().parents[2]
NOBODY = 65534
LINKS = (Path("/usr/local/bin/arkfs"), Path("/sbin/mount.arkfs"))


def make(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "-s", "-C", str(REPO), *args], capture_output=True, text=True, check=False
    )


@pytest.fixture(scope="module")
def installed() -> Iterator[None]:
    """`make install-system` for real (mount(8) only looks in system directories); whatever
    was at those paths before is put back afterwards."""
    before = {p: os.readlink(p) if p.is_symlink() else None for p in LINKS}
    for path in LINKS:
        assert path.is_symlink() or not path.exists(), f"{path} is not a link: not touching it"
    try:
        done = make("install-system")
        assert done.returncode == 0, done.stderr
        yield
    finally:
        make("uninstall-system")
        for path, target in before.items():
            if target is not None:
                path.unlink(missing_ok=True)
                path.symlink_to(target)


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A directory every user can traverse (pytest's own are root's only), with a store."""
    base = Path(tempfile.mkdtemp(prefix="arkfs-shared-"))
    try:
        base.chmod(0o755)
        tree = make_tree(tmp_path_factory.mktemp("tree"))
        tree.chmod(0o755)  # the archive root shows its tree's mode: pytest's are 0700
        publish(tree, ARK, "--store", str(base / "store"))
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def mnt(shared: Path) -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(dir=shared, prefix="mnt-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        cleanup(path, None)
        path.rmdir()


def a_file(mnt: Path) -> Path:
    """The first regular file under the archive root."""
    root = mnt / ARK
    return next(p for p in sorted(root.rglob("*")) if p.is_file() and p.stat().st_size)


def as_nobody(*cmd: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *cmd],
        capture_output=True,
        check=False,
    )


def source_of(path: Path) -> str:
    """The mount source mountinfo shows for path."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields, _, rest = line.partition(" - ")
            if fields.split()[4] == str(path):
                return rest.split()[1]
    raise AssertionError(f"{path} is not mounted")


def mount_t(shared: Path, mnt: Path, options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["mount", "-t", "fuse.arkfs", f"store:{shared / 'store'}", str(mnt), "-o", options],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.slow
def test_allow_other_shares_a_mount_made_through_mount_fuse3(
    installed: None, shared: Path, mnt: Path
) -> None:
    cache = f"cache_dir={shared / 'cache'}"
    done = mount_t(shared, mnt, f"allow_other,uid={NOBODY},gid={NOBODY},umask=027,{cache}")
    assert done.returncode == 0, done.stderr
    assert is_mounted(mnt) and source_of(mnt) == f"store:{shared / 'store'}"  # as given
    path = a_file(mnt)
    st = path.stat()
    assert (st.st_uid, st.st_gid, st.st_mode & 0o027) == (NOBODY, NOBODY, 0)
    assert st.st_mode & 0o440 == 0o440
    read = as_nobody("cat", str(path))
    assert read.returncode == 0 and read.stdout == path.read_bytes(), read.stderr
    cleanup(mnt, None)

    done = mount_t(shared, mnt, f"uid={NOBODY},gid={NOBODY},{cache}")  # not shared
    assert done.returncode == 0, done.stderr
    path = a_file(mnt)
    read = as_nobody("cat", str(path))
    assert read.returncode != 0 and b"Permission denied" in read.stderr


@pytest.mark.slow
def test_an_fstab_line_mounts_with_mount_T(installed: None, shared: Path, mnt: Path) -> None:
    fstab = shared / "fstab"
    options = f"cache_dir={shared / 'cache'},cache_size=64M,defaults,_netdev,nofail,noauto"
    fstab.write_text(
        f"# a test fstab\nstore:{shared / 'store'} {mnt} fuse.arkfs "
        f"{options},x-systemd.automount,allow_other 0 0\n"
    )
    done = subprocess.run(
        ["mount", "-T", str(fstab), str(mnt)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert is_mounted(mnt)
    assert as_nobody("cat", str(a_file(mnt))).returncode == 0  # allow_other, and 0444 files
    fs = os.statvfs(mnt)
    assert fs.f_blocks * fs.f_frsize == 64 << 20  # df shows the chunk cache
    assert fs.f_bfree <= fs.f_blocks


@pytest.mark.slow
def test_mount_a_is_idempotent_as_the_table_shows_the_fstab_source(
    installed: None, shared: Path, mnt: Path
) -> None:
    fstab = shared / "fstab-a"
    source = f"store:{shared / 'store'}"
    fstab.write_text(f"{source} {mnt} fuse.arkfs cache_dir={shared / 'cache-a'},nofail 0 0\n")
    for _ in range(2):  # the second finds it mounted: nothing to do, exit 0
        done = subprocess.run(
            ["mount", "-a", "-T", str(fstab)], capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, done.stderr
    assert source_of(mnt) == source
    with open("/proc/self/mountinfo") as f:
        assert sum(line.split()[4] == str(mnt) for line in f) == 1
    assert a_file(mnt).read_bytes()


def test_a_store_on_read_only_media_mounts_read_only(shared: Path, tmp_path: Path) -> None:
    media = tmp_path / "media"
    media.mkdir()
    bind = subprocess.run(["mount", "--bind", str(shared / "store"), str(media)], check=False)
    assert bind.returncode == 0
    try:
        ro = ["mount", "-o", "remount,bind,ro", str(media)]
        assert subprocess.run(ro, check=False).returncode == 0
        assert os.statvfs(media).f_flag & os.ST_RDONLY
        args = ("--store", str(media), "--cache-dir", str(tmp_path / "cache"))
        with arkfs_mount(tmp_path / "m", *args) as m:
            on_media = {p.relative_to(m.path): p.read_bytes() for p in _files(m.path / ARK)}
        writable = ("--store", str(shared / "store"), "--cache-dir", str(tmp_path / "c2"))
        with arkfs_mount(tmp_path / "w", *writable) as w:
            assert on_media == {p.relative_to(w.path): p.read_bytes() for p in _files(w.path / ARK)}
        assert on_media
        done = run_arkfs("versions", ARK, "--store", str(media))
        assert done.returncode == 0 and "1 version" in done.stdout, done.stderr
    finally:
        subprocess.run(["umount", str(media)], check=False)


def _files(root: Path) -> list[Path]:
    return [p for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()]


def test_mount_passes_one_line_for_an_unknown_option(
    installed: None, shared: Path, mnt: Path
) -> None:
    done = mount_t(shared, mnt, f"cache_dir={shared / 'cache'},colour=blue")
    assert done.returncode != 0 and not is_mounted(mnt)
    assert done.stderr.strip().count("\n") == 0
    assert "unknown mount option 'colour'" in done.stderr and "blue" not in done.stderr


def test_install_system_is_idempotent_and_undoes_itself(tmp_path: Path) -> None:
    dirs = {"BINDIR": tmp_path / "bin", "SBINDIR": tmp_path / "sbin"}
    for d in dirs.values():
        d.mkdir()
    where = [f"{k}={v}" for k, v in dirs.items()]
    (dirs["BINDIR"] / "other").write_text("not ours")
    for _ in range(2):
        done = make("install-system", *where)
        assert done.returncode == 0, done.stderr
        for link in (dirs["BINDIR"] / "arkfs", dirs["SBINDIR"] / "mount.arkfs"):
            assert link.resolve() == (REPO / ".venv/bin/arkfs").resolve()
    for _ in range(2):
        assert make("uninstall-system", *where).returncode == 0
        assert sorted(p.name for d in dirs.values() for p in d.iterdir()) == ["other"]


def test_an_unwritable_cache_dir_is_one_line_and_exit_2(shared: Path, mnt: Path) -> None:
    blocker = shared / "a-file"
    blocker.write_text("x")
    done = run_arkfs("mount", str(mnt), "--store", str(shared / "store"), "--cache-dir",
                     str(blocker / "cache"))  # fmt: skip
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert f"cannot write to the cache directory {blocker / 'cache'}" in done.stderr
    assert not is_mounted(mnt)


def test_a_cache_size_over_the_free_space_is_capped_with_a_warning(
    shared: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    with arkfs_mount(tmp_path / "m", "--store", str(shared / "store"), "--cache-dir", str(cache),
                     "--cache-size", "900000T") as m:  # fmt: skip
        assert m.stderr.count("\n") == 1 and "warning: --cache-size" in m.stderr, m.stderr
        fs = os.statvfs(m.path)
        assert 0 < fs.f_blocks * fs.f_frsize <= shutil.disk_usage(cache).total


def test_the_config_file_gives_mount_settings_the_command_line_overrides(
    shared: Path, tmp_path: Path
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'uid = {NOBODY}\ngid = {NOBODY}\numask = "077"\ncache_size = "64M"\n'
                      'log = "the.log"\n')  # fmt: skip
    with arkfs_mount(tmp_path / "m", "--store", str(shared / "store"), "--config", str(config),
                     "--cache-dir", str(tmp_path / "cache"), "--umask", "022") as m:  # fmt: skip
        st = a_file(m.path).stat()
        assert (st.st_uid, st.st_gid) == (NOBODY, NOBODY)  # from the config file
        assert st.st_mode & 0o044 == 0o044  # --umask 022 won over the config's 077
        fs = os.statvfs(m.path)
        assert fs.f_blocks * fs.f_frsize == 64 << 20
        assert m.log == tmp_path / "the.log"  # relative to the config file
