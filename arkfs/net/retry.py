"""When to retry a request and how long to wait: the one rule every remote call follows.

Connection failures, 429 and 5xx (but 507: a full store stays full) are retried, within a
bounded number of attempts, after pauses that double from first_delay up to max_delay, each
scaled by a random factor in [0.5, 1.5) so that clients which failed together do not retry
together. A Retry-After header lengthens the pause. Everything is bounded by an overall
deadline: no attempt starts and no pause ends at or after it, and the drivers cut an
attempt still under way there, so a reply that trickles in cannot hold a request (or the
thread running it) past it. A host that let connects time out twice is given up at once:
one that drops packets will not answer a third.

The decisions are pure: the drivers (the async httpx loop in http.py, the blocking loop in
ranged.py) pass a clock, do the sleeping and the I/O, and report each failure:

    retry = Retry(policy, clock)
    while (pause := retry.next_pause()) is not None:
        sleep(pause)
        ... one attempt, cut at retry.deadline; return its reply unless it failed ...
        retry.transport_failed(reason)  # or retry.status_failed(...), retry.timed_out()
    raise retry.unreachable(origin)
"""

import random
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace

import trio

from arkfs.backend.base import Unreachable
from arkfs.net.reachability import DOWN_WINDOW, Reachability

NO_SERVER_HINT = "is `arkfs serve` running?"
SERVER_ERROR_HINT = "retry later, or see the server's log"
TOO_SLOW_HINT = "the server or the network is stuck or too slow; see the server's log"
INSUFFICIENT_STORAGE = 507  # RFC 4918: the server's store is full; never retried


def retryable(status: int) -> bool:
    """Whether a reply with this status may be worth another attempt: 429 and 5xx, but not
    507 Insufficient Storage (a full store stays full while the client waits)."""
    return status == 429 or (status >= 500 and status != INSUFFICIENT_STORAGE)


def retry_after(value: str | None) -> float | None:
    """The seconds a Retry-After header asks for (the delta-seconds form), if it does."""
    value = (value or "").strip()
    return float(value) if value.isascii() and value.isdigit() else None


@dataclass(frozen=True)
class RetryPolicy:
    """How many attempts a request gets, the pauses between them, and its overall deadline.

    deadline is in seconds from the first attempt's start (math.inf: none, for uploads,
    which must finish however long they take while they keep moving).
    """

    attempts: int = 4  # the first try and 3 retries
    first_delay: float = 0.25  # doubles after each retry, up to max_delay, with jitter
    max_delay: float = 2.0
    deadline: float = 10.0
    connect_timeouts: int = 2  # connects that may time out before the origin is given up
    connect_timeout: float | None = None  # seconds a connect may take (None: the client's)

    def __post_init__(self) -> None:
        if self.attempts < 1 or self.first_delay < 0 or self.max_delay < self.first_delay:
            raise ValueError(f"a retry policy needs attempts >= 1 and 0 <= delays, got {self}")
        if not self.deadline > 0:
            raise ValueError(f"a retry policy needs a deadline > 0, got {self.deadline}")


class Retry:
    """The retry schedule of one request under a policy (see the module docstring).

    deadline, if given, is absolute on clock's scale (a caller that queued the request
    counts its wait); else it is policy.deadline after now. uniform draws the jitter.
    """

    def __init__(
        self,
        policy: RetryPolicy,
        clock: Callable[[], float],
        *,
        deadline: float | None = None,
        uniform: Callable[[float, float], float] = random.uniform,
    ) -> None:
        self.policy = policy
        self._clock = clock
        self._uniform = uniform
        self.deadline = clock() + policy.deadline if deadline is None else deadline
        self.tries = 0  # attempts started
        self._connect_timeouts = 0
        self._delay = policy.first_delay  # the next pause, before jitter
        self._asked = 0.0  # the pause the last reply asked for (Retry-After)
        self._reason, self._hint = self._too_slow(), TOO_SLOW_HINT

    def left(self) -> float:
        """Seconds until the deadline (negative once it has passed)."""
        return self.deadline - self._clock()

    def next_pause(self) -> float | None:
        """Seconds to wait before the next attempt (0 before the first), or None: give up,
        because the attempts are spent or the next one would not start before the deadline.
        """
        if self.tries == 0:
            pause = 0.0
        elif (
            self.tries >= self.policy.attempts
            or self._connect_timeouts >= self.policy.connect_timeouts
        ):
            return None
        else:
            pause = max(self._delay * self._uniform(0.5, 1.5), self._asked)
            self._delay = min(2 * self._delay, self.policy.max_delay)
        if pause >= self.left():
            return None
        self.tries += 1
        return pause

    def transport_failed(self, reason: str) -> None:
        """The attempt got no reply (connection refused, reset, timed out: reason says)."""
        if self.left() <= 0:
            self.timed_out()
        else:
            self._failed(reason, NO_SERVER_HINT)

    def connect_timed_out(self) -> None:
        """The attempt could not even connect in time."""
        self._connect_timeouts += 1
        self.transport_failed("no connection within the connect timeout")

    def status_failed(self, status: int, message: str, retry_after_header: str | None) -> None:
        """The attempt got a retryable reply: its status, message and Retry-After header."""
        self._failed(f"HTTP {status} ({message})", SERVER_ERROR_HINT)
        self._asked = retry_after(retry_after_header) or 0.0

    def timed_out(self) -> None:
        """The attempt was cut at the deadline."""
        self._failed(self._too_slow(), TOO_SLOW_HINT)

    def unreachable(self, where: str) -> Unreachable:
        """The error to raise once next_pause() gave up; where names the origin."""
        tries = {0: "no attempt", 1: "1 attempt"}.get(self.tries, f"{self.tries} attempts")
        return Unreachable(f"cannot reach {where}: {self._reason} ({tries}); {self._hint}")

    def _failed(self, reason: str, hint: str) -> None:
        self._reason, self._hint, self._asked = reason, hint, 0.0

    def _too_slow(self) -> str:
        return f"no complete answer within {self.policy.deadline:g} s"


PROBE_CONNECT = 0.25  # seconds a probe's connect may take: an origin that is back answers


class _Probe:
    """The one request going out to an origin taken as down, and how it ended."""

    def __init__(self) -> None:
        self.done = trio.Event()
        self.error: Unreachable | None = None


class DownOrigins:
    """Origins that just left a request unanswered: while one is down, its requests go out
        one at a time, each as a single attempt (a probe).

        A request that ends in Unreachable spent its whole retry budget; every request after
        it, the kernel's retry of the failed readahead among them, would wait out the same
        budget again. While the origin is down (net.reachability: window seconds after such
    a failure), a request to that origin makes
        one attempt, no retries, whose connect may take PROBE_CONNECT (a host that drops
        packets costs the kernel's retry a quarter of a second); requests beside it wait for
        its outcome and fail with its error, or go out once it got a reply. Any reply, even an
        error status, shows the origin is up again. So every request is tried, or fails with a
        try made since it came: a read right after an origin heals is never failed untried.
    """

    def __init__(self, window: float = DOWN_WINDOW, clock: Callable[[], float] = time.monotonic):
        self._reach = Reachability(window, clock)  # the one unreachable-endpoint rule
        self._probes: dict[str, _Probe] = {}

    @staticmethod
    def _probing(policy: RetryPolicy) -> RetryPolicy:
        """policy as a probe: one attempt, a short connect."""
        return replace(policy, attempts=1, connect_timeout=PROBE_CONNECT)

    @asynccontextmanager
    async def request(self, where: str, policy: RetryPolicy) -> AsyncIterator[RetryPolicy]:
        """Around one request to origin where: yields the policy to send it under (policy,
        or a single attempt of it while the origin is down)."""
        while (probe := self._probes.get(where)) is not None:
            await probe.done.wait()
            if probe.error is not None:
                raise Unreachable(f"{probe.error} (a request just now found it still down)")
        probe = self._probes.setdefault(where, _Probe()) if self._reach.is_down(where) else None
        try:
            yield policy if probe is None else self._probing(policy)
        except Unreachable as exc:
            self._reach.failed(where, str(exc))
            if probe is not None:
                probe.error = exc
            raise
        except Exception:  # the origin answered, if only with something bad
            self._reach.answered(where)
            raise
        else:
            self._reach.answered(where)
        finally:
            if probe is not None:
                del self._probes[where]
                probe.done.set()
