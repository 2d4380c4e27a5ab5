"""What `arkfs get` shows while it runs, with the display publish uses: rich bars in a real
pseudo-terminal, plain lines without one, nothing with --quiet, a JSON summary on stdout with
--json; the whole reaches 100% only once every file is in place."""

import json
import re
from pathlib import Path

from arkfs.cli.get import GetFeed
from arkfs.cli.progress_display import percent as share
from arkfs.download import GetProgress
from tests.reach.conftest import BIG, TABLES, Published
from tests.support.cli import run_arkfs
from tests.support.terminal import ANSI, frames, percent, run_in_terminal

PHASES = ["list", "fetch", "check"]
BIG_MIB = f"{BIG / 2**20:.1f} MiB"  # as the display shows big.bin's size


def test_terminal_shows_phases_bytes_and_reaches_100_only_at_the_end(
    reach_archive: Published, tmp_path: Path
) -> None:
    out = tmp_path / "big.bin"
    code, stdout, screen = run_in_terminal(
        "get", f"{TABLES}/big.bin", str(out), "--store", str(reach_archive.store), "--no-cache"
    )
    assert code == 0, screen
    assert stdout == ""
    assert "\x1b[" in screen  # drawn as a terminal, not as plain lines
    shown = frames(screen, "get")
    assert shown, screen
    for rows in shown:
        names = [n for n in rows if n != "get"]
        assert names == PHASES[: len(names)], rows
        if percent(rows["get"]) == 100:
            assert percent(rows["check"]) == 100, rows
    last = shown[-1]
    assert all(percent(last[row]) == 100 for row in ["get", *PHASES]), last
    assert f"{BIG_MIB}/{BIG_MIB}" in last["fetch"] and "done" in last["fetch"], last
    assert "get 100%:" not in ANSI.sub("", screen)  # no plain lines on a terminal
    assert out.read_bytes() == (reach_archive.tables / "big.bin").read_bytes()


def test_plain_lines_without_a_terminal(reach_archive: Published, tmp_path: Path) -> None:
    out = tmp_path / "big.bin"
    done = run_arkfs(
        "get", f"{TABLES}/big.bin", str(out), "--store", str(reach_archive.store), "--no-cache"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert "\x1b" not in done.stderr and "\r" not in done.stderr
    lines = done.stderr.splitlines()
    said = [re.match(r"get (\d+)%: (\w+)", line) for line in lines]
    assert all(said), lines
    assert list(dict.fromkeys(m[2] for m in said if m)) == [*PHASES, "got"], lines
    assert lines[-1].startswith(f"get 100%: got {out}: 1 file, {BIG_MIB} ({BIG_MIB} fetched)")
    phases = [m[2] for m in said if m]
    first_whole = next(i for i, m in enumerate(said) if m and m[1] == "100")
    assert first_whole >= phases.index("check"), lines


def test_quiet_prints_nothing_and_json_prints_the_summary(
    reach_archive: Published, tmp_path: Path
) -> None:
    args = [f"{TABLES}/big.bin", str(tmp_path / "big.bin"), "--store", str(reach_archive.store)]
    quiet = run_arkfs("get", *args, "-q")
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")
    code, stdout, screen = run_in_terminal("get", *args, "--quiet")
    assert (code, stdout, screen) == (0, "", "")
    both = run_arkfs("get", *args, "-q", "--json")
    assert both.returncode == 0 and both.stderr == ""
    summary = json.loads(both.stdout)  # the object asked for, alone
    assert (summary["files"], summary["bytes"], summary["kept"]) == (1, BIG, 1)
    shown = run_arkfs("get", *args, "--json")
    assert json.loads(shown.stdout)["kept"] == 1
    assert shown.stderr.splitlines()[-1].startswith("get 100%: got ")
    missing = run_arkfs("get", f"{TABLES}/no/such", "--store", str(reach_archive.store), "-q")
    assert missing.returncode == 1 and len(missing.stderr.splitlines()) == 1


def test_the_whole_is_done_only_once_every_file_is_in_place() -> None:
    p = GetProgress()
    feed = GetFeed(p)
    assert list(feed.rows()) == ["get", "list"] and share(*feed.rows()["get"]) == 0
    p.files, p.total = 2, 1 << 30
    p.begin("fetch")
    p.add(p.total, p.total)
    p.check(p.total)
    assert list(feed.rows()) == ["get", *PHASES]
    assert all(share(*feed.rows()[phase]) == 100 for phase in PHASES)
    assert share(*feed.rows()["get"]) == 99 and not feed.finished()
    p.dest = Path("x")
    assert share(*feed.rows()["get"]) == 100 and feed.finished()


def test_the_whole_weighs_a_second_pass_only_for_resumed_files() -> None:
    """A fresh file's chunks are checked as they come: half of it fetched is half the get
    (the bar and its ETA follow the fetch). A resumed file is hashed again whole."""
    p = GetProgress()
    feed = GetFeed(p)
    p.files, p.total = 1, 1000
    p.begin("fetch")
    p.add(500, 500)
    assert share(*feed.rows()["get"]) == 49  # 500 of 1001
    resumed = GetProgress()
    resumed.files, resumed.total, resumed.to_hash = 1, 1000, 1000
    resumed.add(1000, 600)
    assert share(*GetFeed(resumed).rows()["get"]) == 49  # 1000 of 2001
    resumed.check(1000, whole=True)
    assert share(*GetFeed(resumed).rows()["get"]) == 99
