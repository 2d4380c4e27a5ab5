"""The form mount(8) and mount.fuse3 call arkfs in, turned into `arkfs mount` options."""

from pathlib import Path

import pytest

from arkfs.cli.common import BadInput
from arkfs.cli.main import build_parser
from arkfs.cli.mount_form import is_mount_form, mount_argv
from arkfs.mount.backends import MountError
from arkfs.mount.daemon import check_sharing
from tests.support.cli import run_arkfs

COMMANDS = ["mount", "publish", "serve"]


def test_the_mount_form_is_told_from_commands() -> None:
    assert is_mount_form(["arkfs", "/mnt", "-o", "ro"], COMMANDS, "/usr/local/bin/arkfs")
    assert is_mount_form(["store:/s", "/mnt"], COMMANDS, "arkfs")
    assert is_mount_form(["x"], COMMANDS, "/sbin/mount.arkfs")
    assert not is_mount_form(["mount", "/mnt"], COMMANDS, "arkfs")
    assert not is_mount_form(["--help"], COMMANDS, "arkfs")
    assert not is_mount_form(["publish"], COMMANDS, "arkfs")


def test_sources_and_every_mount_setting_become_options() -> None:
    opts = (
        "rw,allow_other,uid=1,gid=2,umask=027,cache_dir=/c,cache_size=1G,metadata_ttl=5,"
        "config=/f.toml,server=http://b,registry=/r.json,log=/l,debug,noexec,noxattr,hide_xattrs,token_file=/t"
    )
    argv = mount_argv(["http://a:8080", "/mnt", "-o", opts, "-n"])
    assert argv == [
        "mount", "/mnt", "--server", "http://a:8080", "--fsname=http://a:8080", "--allow-other",
        "--uid=1", "--gid=2", "--umask=027", "--cache-dir=/c", "--cache-size=1G",
        "--metadata-ttl=5",
        "--config=/f.toml", "--server=http://b", "--registry=/r.json", "--log=/l",
        "--log-level=debug", "--noexec", "--no-xattrs", "--hide-xattrs", "--token-file=/t",
    ]  # fmt: skip
    assert mount_argv(["store:/srv/s", "/m"]) == [
        "mount", "/m", "--store", "/srv/s", "--fsname=store:/srv/s"
    ]  # fmt: skip
    assert mount_argv(["arkfs", "/m", "-oallow_root"]) == [
        "mount", "/m", "--fsname=arkfs", "--allow-root"
    ]  # fmt: skip
    assert mount_argv(["arkfs", "/m", "-o", "allow_private"]) == [
        "mount", "/m", "--fsname=arkfs", "--allow-private"
    ]  # fmt: skip
    assert build_parser().parse_args(["mount", "/m", "--allow-private"]).allow_private
    args = build_parser().parse_args(argv)
    assert args.sharing == "allow_other" and args.umask == 0o27 and args.log_level == "debug"
    assert args.no_xattrs and args.hide_xattrs


def test_mount8_options_are_accepted_and_ignored() -> None:
    ignored = "defaults,ro,rw,_netdev,nofail,noauto,x-systemd.automount,x-systemd.idle-timeout=60"
    assert mount_argv(["arkfs", "/m", "-o", ignored + ",nosuid,nodev,dev,suid,relatime"]) == [
        "mount",
        "/m",
        "--fsname=arkfs",
    ]


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["arkfs", "/m", "-o", "bogus"], "unknown mount option 'bogus'"),
        (["arkfs", "/m", "-o", "uid"], "unknown mount option 'uid'"),
        (["ftp://x", "/m"], "not an http(s) server URL"),
        (["arkfs", "/m", "-q"], "unknown mount helper flag"),
        (["arkfs", "/m", "/n"], "usage: arkfs SOURCE MOUNTPOINT"),
    ],
)
def test_bad_mount_forms_are_bad_input(argv: list[str], words: str) -> None:
    with pytest.raises(BadInput, match=words.replace("(", r"\(").replace(")", r"\)")):
        mount_argv(argv)


@pytest.mark.parametrize("option", ["token=s3cret-value", "password=s3cret-value", "uid=s3cret"])
def test_an_unknown_option_never_echoes_its_value(option: str) -> None:
    name = option.partition("=")[0]
    with pytest.raises(BadInput, match=f"unknown mount option '{name}'") as caught:
        mount_argv(["arkfs", "/m", "-o", f"ro,{option}", "-o", "uid="])
    assert "s3cret" not in str(caught.value)


def test_the_cli_refuses_an_unknown_option_in_one_line(tmp_path: Path) -> None:
    done = run_arkfs("arkfs", str(tmp_path), "-o", "ro,bogus")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "unknown mount option 'bogus'" in done.stderr
    done = run_arkfs("arkfs", str(tmp_path), "-o", "ro,token=s3cret-value")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "unknown mount option 'token'" in done.stderr and "s3cret" not in done.stderr


def test_allow_other_for_a_user_needs_user_allow_other(tmp_path: Path) -> None:
    conf = tmp_path / "fuse.conf"
    conf.write_text("# user_allow_other\nmount_max = 1000\n")
    with pytest.raises(MountError, match=f"user_allow_other in {conf}") as caught:
        check_sharing("allow_other", conf, euid=1000)
    assert caught.value.usage
    check_sharing("allow_other", conf, euid=0)  # root may
    check_sharing(None, conf, euid=1000)  # nothing asked
    conf.write_text("user_allow_other\n")
    check_sharing("allow_root", conf, euid=1000)


def test_ca_file_becomes_arkfs_own_option_before_mount() -> None:
    argv = mount_argv(["https://h", "/m", "-o", "ca_file=/etc/ca.pem,allow_other"])
    assert argv == [
        "--ca-file=/etc/ca.pem", "mount", "/m", "--server", "https://h", "--fsname=https://h",
        "--allow-other",
    ]  # fmt: skip
    args = build_parser().parse_args(argv)
    assert args.ca_file == "/etc/ca.pem" and args.sharing == "allow_other"
