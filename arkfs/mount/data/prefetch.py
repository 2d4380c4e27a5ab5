"""The prefetch policy: from the reads of each stream, which bytes to claim ahead. Pure logic.

A stream is a sequence of reads (an open file, if the caller names one, else the file).
Reads that start where the previous one ended, or up to SEQ_SLACK after, are sequential;
those starting up to SEQ_SLACK before change nothing (re-reads, requests the kernel sent
out of order); any other read ends the run.
Each sequential read doubles a window from PREFETCH_MIN up to PREFETCH_MAX, and when less
than half a window lies claimed ahead of the reader, the rest of the window is to be
claimed: on_read returns it, and the caller says with claimed() how far its claim got.
At most STREAMS streams are tracked; the least recently read is forgotten first.
"""

from collections.abc import Hashable
from dataclasses import dataclass

from arkfs.util.lru import LRU

MIB = 1024 * 1024
STREAMS = 256  # streams (open files, or files) whose read pattern is tracked
PREFETCH_MIN, PREFETCH_MAX = 1 * MIB, 32 * MIB
SEQ_SLACK = 1 * MIB  # how far from the expected offset a read still counts as sequential


@dataclass(slots=True)
class _Stream:
    """The read pattern of one stream: where a sequential read goes next, what is claimed."""

    next: int
    ahead: int
    window: int = 0


class Prefetcher:
    """Follows the read pattern of each stream and says what to claim ahead of it."""

    def __init__(self, streams: int = STREAMS) -> None:
        self._streams: LRU[Hashable, _Stream] = LRU(streams)

    def __len__(self) -> int:
        """How many streams are tracked."""
        return len(self._streams)

    def on_read(self, stream: Hashable, offset: int, end: int, size: int) -> tuple[int, int] | None:
        """Note a read of bytes [offset, end) of a file of size bytes; the bytes
        [start, stop) to claim ahead of it now, if any (never past size, never empty)."""
        s = self._streams.get(stream)
        if s is None:
            self._streams.put(stream, _Stream(end, end))
            return None
        if not -SEQ_SLACK <= offset - s.next <= SEQ_SLACK:
            s.next = s.ahead = end
            s.window = 0
            return None
        if offset < s.next:  # a re-read, or a request the kernel sent out of order
            return None
        s.next = end
        s.ahead = max(s.ahead, s.next)
        s.window = min(max(2 * s.window, PREFETCH_MIN), PREFETCH_MAX)
        if s.ahead - s.next < s.window // 2 and s.ahead < size:
            return s.ahead, min(s.next + s.window, size)
        return None

    def claimed(self, stream: Hashable, stop: int) -> None:
        """The claim on_read asked for got up to stop (to a chunk's end, maybe past the
        window; short of it when the claim could not all start now)."""
        s = self._streams.peek(stream)
        if s is not None:
            s.ahead = max(s.ahead, stop)

    def end(self, stream: Hashable) -> None:
        """Stop tracking a stream (its file was closed)."""
        self._streams.pop(stream)
