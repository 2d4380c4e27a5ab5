"""What `arkfs publish` shows of its progress: its counters as rows for the display that
every long command shares (arkfs/cli/progress_display.py)."""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from arkfs.cli import progress_display as display
from arkfs.cli.progress_display import duration, percent
from arkfs.publish.progress import Progress
from arkfs.util.sizes import human

OVERALL = "publish"

__all__ = ["OVERALL", "PublishFeed", "percent", "rows", "shown"]


def rows(p: Progress) -> dict[str, tuple[int, int | None]]:
    """Done and total (None: not known yet) of the whole publish and of each phase begun,
    in bytes, in the order they began."""
    later = len(p.phases) > 1
    every = {
        OVERALL: p.overall(),
        "scan": (p.total, p.total if later else None),
        "hash": (p.hashed, p.total),
        "upload": (p.stored, p.new),
        "bind": (p.shards_sent, p.shard_bytes or None),
    }
    return {name: every[name] for name in (OVERALL, *p.phases) if name in every}


class PublishFeed:
    """A publish's counters, as the progress display reads them."""

    whole = OVERALL

    def __init__(self, progress: Progress) -> None:
        self.progress = progress

    def rows(self) -> dict[str, tuple[int, int | None]]:
        return rows(self.progress)

    def began(self, phase: str) -> tuple[int, int]:
        return self.progress.began[phase]

    def finished(self) -> bool:
        return self.progress.version is not None

    def label(self, row: str) -> str:
        return _outcome(self.progress) if row == "bind" and self.finished() else row

    def summary(self, seconds: float) -> str:
        p = self.progress
        return (
            f"publish 100%: {_outcome(p)}: {p.files} files, {human(p.total)}, {_read(p)}, "
            f"{human(p.new)} new ({human(p.uploaded)} uploaded), {human(p.deduplicated)} "
            f"deduplicated, in {duration(seconds)}"
        )


@contextmanager
def shown(progress: Progress, quiet: bool, stream: TextIO | None = None) -> Iterator[None]:
    """Show the publish's progress on stream (stderr) while the block runs."""
    with display.shown(PublishFeed(progress), quiet, stream):
        yield


def _read(p: Progress) -> str:
    """How much was read and hashed, and how much the tree index knew unchanged (bytes
    counted as hashed in the bars, but not read)."""
    unread = f" ({human(p.known)} unchanged since the last publish: not read)" if p.known else ""
    return f"{human(p.read)} read{unread}"


def _outcome(p: Progress) -> str:
    """How a finished publish ended: 'bound vN', or 'nothing changed since vN'."""
    return f"nothing changed since v{p.version}" if p.unchanged else f"bound v{p.version}"
