"""The one unreachable-endpoint policy: which servers just failed to answer, and when to try
one again. The mount's remote reads (net.retry.DownOrigins), the mirrors
(backend.mirrors) and the mount's catalog (mount.names.catalog) all keep one of these, so
"a dead server" means the same everywhere.

The rule: an endpoint that left a request unanswered is DOWN for DOWN_WINDOW seconds,
during which callers do not wait on it again (they fail fast, or ask another mirror
first). When the window has passed it is DUE: the next caller asks it once, and a caller
that wants only one such probe per window re-arms it (`probing`). Any answer, even an
error status, makes it UP again.
"""

import enum
import time
from collections.abc import Callable

DOWN_WINDOW = 2.0  # seconds an endpoint that left a request unanswered is taken as down


class State(enum.Enum):
    UP = "up"  # never failed, or answered since
    DOWN = "down"  # failed within the window: do not wait on it
    DUE = "due"  # failed, and the window has passed: ask it once to see


class Reachability:
    """Per endpoint (an origin, a mirror's or backend's name): when it last failed, why,
    and so its State."""

    def __init__(
        self, window: float = DOWN_WINDOW, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.window = window
        self._clock = clock
        self._failed: dict[str, tuple[float, str]] = {}  # endpoint -> (down until, why)

    def state(self, where: str) -> State:
        """UP, DOWN (within its window) or DUE (failed, window passed)."""
        failed = self._failed.get(where)
        if failed is None:
            return State.UP
        return State.DOWN if self._clock() < failed[0] else State.DUE

    def is_down(self, where: str) -> bool:
        """Failed within the window: a caller should not wait on it now."""
        return self.state(where) is State.DOWN

    def why(self, where: str) -> str | None:
        """What its last failure said (None: it is up)."""
        failed = self._failed.get(where)
        return None if failed is None else failed[1]

    def failed(self, where: str, why: str) -> bool:
        """It left a request unanswered: DOWN for the window from now. True if it was UP
        (the news a caller logs once)."""
        was_up = where not in self._failed
        self._failed[where] = (self._clock() + self.window, why)
        return was_up

    def probing(self, where: str) -> None:
        """A caller is asking a DUE endpoint once: DOWN again for the window, so the other
        callers of that window do not ask too."""
        self._failed[where] = (self._clock() + self.window, self._failed[where][1])

    def answered(self, where: str) -> bool:
        """It answered: UP. True if it was not (the news a caller logs once)."""
        return self._failed.pop(where, None) is not None
