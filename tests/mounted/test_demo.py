"""`make demo`, the README's first command: examples/demo.sh publishes the example archive,
mounts it, reads it with ls, cp, diff and getfattr, unmounts, and leaves nothing behind."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

DEMO = Path(__file__).parents[2] / "examples" / "demo.sh"


def test_the_demo_runs_through_and_cleans_up() -> None:
    done = subprocess.run(
        ["bash", str(DEMO), sys.prefix],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = done.stdout
    assert done.returncode == 0, out[-3000:] + done.stderr[-3000:]
    assert "Traceback" not in out + done.stderr
    assert "\nidentical\n" in out  # diff -r of the copy against the source
    assert "ark:12345/x6np1wh8k" in out and "user.ark.who=" in out  # getfattr -d
    # three spellings of one ARK, one inode
    inodes = re.findall(r"^(\d+) \S+/c3/s5\.v7\.xsl$", out, re.MULTILINE)
    assert len(inodes) == 3 and len(set(inodes)) == 1, out
    [work] = set(re.findall(r"(/tmp/arkfs-demo\.\w+)/", out))
    assert not Path(work).exists()
    mounts = Path("/proc/mounts").read_text()
    assert work not in mounts
