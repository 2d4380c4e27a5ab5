"""Every mount setting has a config key, the command line overrides the config file, and
`arkfs config show` says where each value came from (never a token)."""

from pathlib import Path

import pytest

from arkfs.mount.config import SETTINGS
from tests.support.cli import run_arkfs


def settings(out: str) -> dict[str, tuple[str, str]]:
    """`key = value  # source` lines as key -> (value, source)."""
    rows = {}
    for line in out.splitlines():
        if line.startswith("#"):
            continue
        assignment, _, source = line.partition("  # ")
        key, _, value = assignment.partition(" = ")
        rows[key] = (value.strip(), source)
    return rows


def test_config_show_tells_where_each_setting_came_from(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        'cache_size = "64M"\nallow_other = true\numask = "027"\nlog_level = "debug"\n'
        'log = "logs/mount.log"\nuid = 7\nservers = ["http://a.example:8080"]\n'
        '[tokens]\n"http://a.example:8080" = "s3cret-config-token"\n'
    )
    done = run_arkfs("config", "show", "--config", str(config), "--cache-size", "32M",
                     "--gid", "9", "--server", "http://b.example")  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = settings(done.stdout)
    assert rows["cache_size"] == ('"32M"', "command line")
    assert rows["gid"] == ("9", "command line")
    assert rows["allow_other"] == ("true", str(config))
    assert rows["umask"] == ('"027"', str(config))
    assert rows["uid"] == ("7", str(config))
    assert rows["log"] == (f'"{tmp_path / "logs/mount.log"}"', str(config))
    assert rows["log_level"] == ('"debug"', str(config))
    assert rows["noexec"] == ("false", "default")
    assert rows["servers"][1] == f"command line + {config}"
    assert "s3cret-config-token" not in done.stdout
    assert set(SETTINGS) | {"metadata_ttl"} <= set(rows)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("umask = '999'\n", "umask must be an octal mask"),
        ("allow_other = 'yes'\n", "allow_other must be true or false"),
        ("cache_size = 'lots'\n", "cache_size must be a size"),
        ("log_level = 'loud'\n", "log_level must be one of"),
        ("uid = -1\n", "uid must be a number >= 0"),
    ],
)
def test_a_bad_setting_in_the_config_is_one_line_and_exit_2(
    tmp_path: Path, text: str, words: str
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(text)
    done = run_arkfs("config", "show", "--config", str(config))
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert words in done.stderr
