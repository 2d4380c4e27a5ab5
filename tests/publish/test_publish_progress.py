"""What `arkfs publish` shows while it runs: rich bars in a real pseudo-terminal, plain lines
without one, nothing with --quiet; and the whole never reaches 100% before the bind."""

import json
import os
import random
import re
from pathlib import Path

import pytest

from arkfs.cli import publish_progress as display
from arkfs.publish.progress import Progress
from tests.support import faults
from tests.support.cli import run_arkfs
from tests.support.faults import fault_proxy
from tests.support.server import arkfs_server
from tests.support.terminal import ANSI, frames, percent, run_in_terminal

PHASES = ["scan", "hash", "upload", "bind"]
WRITE = "w-token"


def tree_of(tmp_path: Path, size: int) -> Path:
    """A tree with one random file of size bytes and a small one."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "big.bin").write_bytes(random.Random(size).randbytes(size))
    (tree / "small.txt").write_text("sines\n")
    return tree


def check_frames(screen: str) -> list[dict[str, str]]:
    """Every frame: the whole first, then the phases begun so far in order; the whole at 100%
    only in a frame that shows the bind done. The last frame: all of it done."""
    shown = frames(screen, "publish")
    assert shown, screen
    for rows in shown:
        names = [n for n in rows if n != "publish"]
        assert names == [*PHASES, "bound"][: len(names)] or names == [*PHASES[:3], "bound"], rows
        if percent(rows["publish"]) == 100:
            assert "bound" in rows, rows
    last = shown[-1]
    assert percent(last["publish"]) == 100 and last["bound"].startswith("bound v1"), last
    assert all(percent(last[p]) == 100 for p in PHASES[:3]), last
    return shown


def test_terminal_shows_phases_and_reaches_100_only_bound(tmp_path: Path) -> None:
    tree = tree_of(tmp_path, 24 << 20)
    code, stdout, screen = run_in_terminal(
        "publish", str(tree), "--ark", "ark:99999/p1", "--store", str(tmp_path / "store")
    )
    assert code == 0, screen
    assert stdout.startswith("published ark:99999/p1 as v1: 2 files"), stdout
    check_frames(screen)
    assert "\x1b[" in screen  # drawn as a terminal, not as plain lines
    assert "publish 0%:" not in ANSI.sub("", screen)


def test_terminal_shows_the_upload_while_the_server_takes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CAS answers the first xorb upload a byte at a time: frames show the upload under
    way, and none shows the whole done until the bind."""
    monkeypatch.setattr(faults, "TRICKLE_TICK", 0.15)
    tree = tree_of(tmp_path, 4 << 20)
    tokens = tmp_path / "tokens"
    tokens.write_text(f"{WRITE} write\n")
    with (
        arkfs_server(tmp_path / "served", "--tokens", str(tokens)) as (url, _),
        fault_proxy(url) as proxy,
    ):
        proxy.inject("trickle", "upload", count=1)
        code, stdout, screen = run_in_terminal(
            "publish", str(tree), "--ark", "ark:99999/p2", "--server", proxy.url,
            env=dict(os.environ) | {"ARKFS_TOKEN": WRITE},
        )  # fmt: skip
        assert proxy.damaged == 1
    assert code == 0, screen
    assert "published ark:99999/p2 as v1" in stdout
    shown = check_frames(screen)
    uploading = [
        rows for rows in shown if "upload" in rows and "bind" not in rows and "bound" not in rows
    ]
    assert uploading, screen
    assert all(percent(rows["publish"]) < 100 for rows in uploading)
    assert any(percent(rows["upload"]) < 100 for rows in uploading)
    assert WRITE not in screen


def test_plain_lines_without_a_terminal(tmp_path: Path) -> None:
    tree = tree_of(tmp_path, 1 << 20)
    out = run_arkfs("publish", str(tree), "--ark", "ark:99999/p3", "--store", str(tmp_path / "s"))
    assert out.returncode == 0, out.stderr
    assert "\x1b" not in out.stderr and "\r" not in out.stderr
    lines = out.stderr.splitlines()
    said = [re.match(r"publish (\d+)%: (\w+)", line) for line in lines]
    assert all(said), lines
    phases = [m[2] for m in said if m]
    assert list(dict.fromkeys(phases)) == [*PHASES, "bound"], lines
    assert phases[-1] == "bound" and phases.count("bound") == 1, lines
    assert lines[-1].startswith("publish 100%: bound v1: 2 files, 1.0 MiB, 1.0 MiB read,"), lines
    first_whole = next(i for i, m in enumerate(said) if m and m[1] == "100")
    assert first_whole >= phases.index("bind"), lines
    assert out.stdout.startswith("published ark:99999/p3 as v1")


def test_quiet_prints_nothing_but_errors(tmp_path: Path) -> None:
    tree = tree_of(tmp_path, 100_000)
    store = str(tmp_path / "store")
    out = run_arkfs("publish", str(tree), "--ark", "ark:99999/p4", "--store", store, "-q")
    assert (out.returncode, out.stdout, out.stderr) == (0, "", "")
    code, stdout, screen = run_in_terminal(
        "publish", str(tree), "--ark", "ark:99999/p4", "--store", store, "--quiet"
    )
    assert (code, stdout, screen) == (0, "", "")
    record = run_arkfs(
        "publish", str(tree), "--ark", "ark:99999/p4", "--store", store, "-q", "--json"
    )
    assert record.returncode == 0 and record.stderr == ""
    assert json.loads(record.stdout)["changed"] is False  # the object asked for, alone
    bad = run_arkfs(
        "publish", str(tmp_path / "no"), "--ark", "ark:99999/p4", "--store", store, "-q"
    )
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.count("\n") == 1 and "is not a directory" in bad.stderr, bad.stderr


def test_the_whole_is_done_only_once_bound() -> None:
    """With every byte hashed, uploaded and sent, the whole still waits for the bind."""
    p = Progress(files=1, total=1 << 30)
    p.begin("hash")
    p.hashed = p.new = p.total
    p.begin("upload")
    p.stored = p.new
    p.begin("bind")
    p.shard_bytes = p.shards_sent = 4096
    assert display.percent(*p.overall()) == 99
    assert list(display.rows(p)) == ["publish", *PHASES]
    assert all(display.percent(*display.rows(p)[phase]) == 100 for phase in PHASES)
    p.bound(3)
    assert display.percent(*p.overall()) == 100 and p.phases[-1] == "done"
