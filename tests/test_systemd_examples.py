"""The systemd units in examples/systemd stay in step with the CLI: their command lines and
mount options parse, and the daemons are Type=notify."""

import configparser
import shlex
from pathlib import Path

import pytest

from arkfs.cli.main import build_parser
from arkfs.cli.mount_form import mount_argv

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`

UNITS = Path(__file__).resolve().parents[1] / "examples" / "systemd"


def unit(name: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read(UNITS / name)
    return parser


@pytest.mark.parametrize("name", ["arkfs-serve.service", "arkfs-mount.service"])
def test_the_services_are_type_notify_and_their_command_lines_parse(name: str) -> None:
    service = unit(name)["Service"]
    assert service["Type"] == "notify"
    argv = shlex.split(service["ExecStart"])
    assert argv[0] == "/usr/local/bin/arkfs"  # where make install-system links it
    args = build_parser().parse_args(argv[1:])
    assert args.command in ("serve", "mount")
    if args.command == "mount":
        assert args.foreground  # so systemd's main process is the one that notifies


def test_the_mount_and_automount_units_agree() -> None:
    mount = unit("arks.mount")["Mount"]
    assert mount["Type"] == "fuse.arkfs"
    argv = mount_argv([mount["What"], mount["Where"], "-o", mount["Options"]])
    args = build_parser().parse_args(argv)
    assert args.sharing == "allow_other" and args.server == [mount["What"]]
    assert unit("arks.automount")["Automount"]["Where"] == mount["Where"]
