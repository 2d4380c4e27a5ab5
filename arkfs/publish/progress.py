"""Publish progress: counters, and a one-line bar on a terminal."""

import sys
import time
from dataclasses import dataclass, field
from typing import TextIO

from arkfs.util.sizes import human


@dataclass
class Progress:
    """What a publish has done so far; draws itself at most ten times a second on a TTY."""

    total: int = 0  # bytes of file content to hash
    hashed: int = 0
    new: int = 0  # chunk bytes that go into new xorbs
    deduplicated: int = 0  # chunk bytes referenced from xorbs already in the CAS
    uploaded: int = 0  # serialized xorb bytes the CAS accepted
    xorbs: int = 0
    files: int = 0  # files to publish
    files_stored: int = 0  # files whose every chunk the CAS has acknowledged
    stream: TextIO | None = field(default_factory=lambda: sys.stderr)
    _drawn: float = 0.0
    _start: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        if self.stream is not None and not self.stream.isatty():
            self.stream = None

    def update(self, force: bool = False) -> None:
        """Redraw the bar if due."""
        now = time.monotonic()
        if self.stream is None or (not force and now - self._drawn < 0.1):
            return
        self._drawn = now
        share = self.hashed / self.total if self.total else 1.0
        width = 24
        bar = "#" * int(share * width) + "-" * (width - int(share * width))
        rate = self.hashed / max(now - self._start, 1e-6)
        self.stream.write(
            f"\r[{bar}] {share:4.0%} hashed {human(self.hashed)}/{human(self.total)} "
            f"({human(rate)}/s)  new {human(self.new)}  dedup {human(self.deduplicated)}  "
            f"uploaded {human(self.uploaded)}\x1b[K"
        )
        self.stream.flush()

    def close(self) -> None:
        """Draw the final state and end the line."""
        if self.stream is not None:
            self.update(force=True)
            self.stream.write("\n")
            self.stream.flush()
