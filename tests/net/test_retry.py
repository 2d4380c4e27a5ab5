"""The retry rule (arkfs.net.retry) on a fake clock: pauses, jitter, attempts, the
deadline and Retry-After. No sockets and no sleeping: the tests play the driver's part."""

import math
import random
from collections.abc import Callable

import pytest
import trio
import trio.testing
from hypothesis import given
from hypothesis import strategies as st

from arkfs.backend.base import BadReply, Unreachable
from arkfs.net.retry import (
    PROBE_CONNECT,
    DownOrigins,
    Retry,
    RetryPolicy,
    retry_after,
    retryable,
)

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`

WHERE = "http://127.0.0.1:9"


class Clock:
    """A clock that moves only when told."""

    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def low(a: float, b: float) -> float:
    return a


def high(a: float, b: float) -> float:
    return b


def drive(retry: Retry, clock: Clock, attempt_time: float = 0.0) -> list[float]:
    """Play the driver: every attempt fails (refused) after attempt_time; the pauses."""
    got = []
    while (pause := retry.next_pause()) is not None:
        got.append(pause)
        clock.now += pause
        assert clock.now < retry.deadline  # no attempt starts at or past the deadline
        clock.now += attempt_time
        retry.transport_failed("connection refused")
    return got


@pytest.mark.parametrize(("uniform", "factor"), [(low, 0.5), (high, 1.5)])
def test_pauses_double_up_to_max_delay_scaled_by_the_jitter_bounds(
    uniform: Callable[[float, float], float], factor: float
) -> None:
    policy = RetryPolicy(attempts=7, first_delay=0.25, max_delay=2.0, deadline=math.inf)
    clock = Clock()
    got = drive(Retry(policy, clock, uniform=uniform), clock)
    assert got == [0.0] + [factor * d for d in (0.25, 0.5, 1.0, 2.0, 2.0, 2.0)]


def test_jitter_spreads_between_half_and_one_and_a_half_of_the_base() -> None:
    policy = RetryPolicy(attempts=5, first_delay=0.1, max_delay=0.4, deadline=math.inf)
    bases = [0.1, 0.2, 0.4, 0.4]
    factors = []
    for seed in range(200):
        clock = Clock()
        got = drive(Retry(policy, clock, uniform=random.Random(seed).uniform), clock)
        assert got[0] == 0.0 and len(got) == 5
        for pause, base in zip(got[1:], bases, strict=True):
            assert 0.5 * base <= pause <= 1.5 * base
            factors.append(pause / base)
    assert min(factors) < 0.55 and max(factors) > 1.45


def test_attempts_are_bounded_and_counted_in_the_message() -> None:
    clock = Clock()
    retry = Retry(RetryPolicy(attempts=3, deadline=60), clock)
    assert len(drive(retry, clock)) == 3 and retry.tries == 3
    error = retry.unreachable(WHERE)
    assert isinstance(error, Unreachable)
    assert str(error) == (
        f"cannot reach {WHERE}: connection refused (3 attempts); is `arkfs serve` running?"
    )


def test_no_retry_starts_when_its_pause_would_reach_the_deadline() -> None:
    clock = Clock()
    policy = RetryPolicy(attempts=10, first_delay=1.0, max_delay=1.0, deadline=3.5)
    retry = Retry(policy, clock, uniform=high)
    assert retry.deadline == 103.5
    # attempts start at 0 and 2 s (each fails after 0.5 s, pauses are 1.5 s); a third would
    # start at 4 s, past the deadline: give up at 2.5 s rather than sleep for nothing
    assert drive(retry, clock, attempt_time=0.5) == [0.0, 1.5]
    assert clock.now == 102.5
    assert "connection refused (2 attempts)" in str(retry.unreachable(WHERE))


def test_an_attempt_that_runs_into_the_deadline_says_so() -> None:
    clock = Clock()
    retry = Retry(RetryPolicy(deadline=2.0), clock)
    assert retry.next_pause() == 0.0
    clock.now += 2.0
    retry.transport_failed("timed out")  # what a socket says when the time left ran out
    assert retry.left() <= 0 and retry.next_pause() is None
    assert str(retry.unreachable(WHERE)) == (
        f"cannot reach {WHERE}: no complete answer within 2 s (1 attempt); "
        "the server or the network is stuck or too slow; see the server's log"
    )
    cut = Retry(RetryPolicy(deadline=0.5), clock)
    assert cut.next_pause() == 0.0
    clock.now += 0.5
    cut.timed_out()  # the driver cut the attempt (a cancel scope)
    assert cut.next_pause() is None
    assert "no complete answer within 0.5 s (1 attempt)" in str(cut.unreachable(WHERE))


def test_a_deadline_already_past_allows_no_attempt() -> None:
    """A caller's absolute deadline, spent waiting for a worker thread."""
    clock = Clock()
    retry = Retry(RetryPolicy(deadline=10), clock, deadline=clock.now)
    assert retry.next_pause() is None and retry.tries == 0
    assert "no complete answer within 10 s (no attempt)" in str(retry.unreachable(WHERE))


def test_retry_after_lengthens_the_pause_once() -> None:
    clock = Clock()
    retry = Retry(RetryPolicy(attempts=5, first_delay=0.25, deadline=10), clock, uniform=low)
    assert retry.next_pause() == 0.0
    retry.status_failed(503, "busy", "3")
    assert retry.next_pause() == 3.0
    clock.now += 3.0
    retry.transport_failed("reset")  # a later failure without Retry-After: back to backoff
    assert retry.next_pause() == 0.25


def test_retry_after_past_the_deadline_gives_up_at_once() -> None:
    clock = Clock()
    retry = Retry(RetryPolicy(attempts=5, deadline=10), clock)
    assert retry.next_pause() == 0.0
    retry.status_failed(429, "slow down", "30")
    assert retry.next_pause() is None and clock.now == 100.0
    assert str(retry.unreachable(WHERE)) == (
        f"cannot reach {WHERE}: HTTP 429 (slow down) (1 attempt); "
        "retry later, or see the server's log"
    )


@given(
    attempts=st.integers(1, 8),
    first=st.floats(0.0, 2.0),
    growth=st.floats(1.0, 4.0),
    deadline=st.floats(0.01, 30.0),
    durations=st.lists(st.floats(0.0, 10.0), min_size=8, max_size=8),
    asked=st.lists(st.one_of(st.none(), st.integers(0, 20).map(str)), min_size=8, max_size=8),
    seed=st.integers(0, 2**32),
)
def test_every_schedule_keeps_to_its_attempts_and_deadline(
    attempts: int,
    first: float,
    growth: float,
    deadline: float,
    durations: list[float],
    asked: list[str | None],
    seed: int,
) -> None:
    policy = RetryPolicy(attempts, first, first * growth, deadline)
    clock = Clock()
    retry = Retry(policy, clock, uniform=random.Random(seed).uniform)
    started = []
    while (pause := retry.next_pause()) is not None:
        assert pause >= 0
        clock.now += pause
        started.append(clock.now)
        clock.now = min(clock.now + durations[len(started) - 1], retry.deadline)  # cut there
        if asked[len(started) - 1] is None:
            retry.transport_failed("reset")
        else:
            retry.status_failed(503, "busy", asked[len(started) - 1])
    assert 1 <= len(started) <= attempts and retry.tries == len(started)
    assert all(t < retry.deadline for t in started)
    assert clock.now <= retry.deadline


def test_retryable_statuses() -> None:
    assert all(retryable(s) for s in (429, 500, 502, 503, 504))
    assert not any(retryable(s) for s in (200, 206, 400, 401, 403, 404, 416))


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("5", 5.0),
        (" 0 ", 0.0),
        (None, None),
        ("", None),
        ("-1", None),
        ("1.5", None),
        ("\u00b2", None),  # a digit to str.isdigit, not to float
    ],
)
def test_retry_after_in_seconds(header: str | None, seconds: float | None) -> None:
    assert retry_after(header) == seconds


def test_retry_after_as_a_date_is_ignored() -> None:
    assert retry_after("Wed, 21 Oct 2015 07:28:00 GMT") is None


@pytest.mark.parametrize(
    "bad",
    [
        {"attempts": 0},
        {"first_delay": -1.0},
        {"first_delay": 3.0, "max_delay": 2.0},
        {"deadline": 0.0},
        {"deadline": math.nan},
    ],
)
def test_policy_refuses_nonsense(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        RetryPolicy(**bad)  # type: ignore[arg-type]


def test_a_host_whose_connects_time_out_twice_is_given_up() -> None:
    clock = Clock()
    retry = Retry(RetryPolicy(attempts=10, deadline=60), clock, uniform=low)
    for _ in range(2):
        assert retry.next_pause() is not None
        clock.now += 3.0
        retry.connect_timed_out()
    assert retry.next_pause() is None
    assert "no connection within the connect timeout (2 attempts)" in str(retry.unreachable(WHERE))


def test_a_refused_connect_is_not_a_connect_timeout() -> None:
    clock = Clock()
    retry = Retry(RetryPolicy(attempts=4, deadline=60), clock, uniform=low)
    assert len(drive(retry, clock)) == 4


POLICY = RetryPolicy(attempts=4)


async def fail(down: DownOrigins, error: Exception) -> None:
    with pytest.raises(type(error)):
        async with down.request(WHERE, POLICY):
            raise error


async def attempts(down: DownOrigins, where: str = WHERE) -> int:
    """The attempts a request that gets a reply is given."""
    async with down.request(where, POLICY) as policy:
        return policy.attempts


def test_a_request_to_a_down_origin_is_tried_once_not_failed_untried() -> None:
    async def main() -> None:
        clock = Clock()
        down = DownOrigins(5.0, clock)
        assert await attempts(down) == 4
        await fail(down, Unreachable("cannot reach it"))
        assert await attempts(down, "http://127.0.0.1:10") == 4  # other origins: unaffected
        assert await attempts(down) == 1  # in the window: one attempt, which is answered
        assert await attempts(down) == 4  # up again

    trio.run(main)


def test_requests_beside_a_probe_wait_for_it_and_share_its_outcome() -> None:
    async def main() -> None:
        clock = Clock()
        down = DownOrigins(5.0, clock)
        await fail(down, Unreachable("gone"))
        release = trio.Event()
        outcomes: list[str] = []

        async def probe() -> None:
            with pytest.raises(Unreachable):
                async with down.request(WHERE, POLICY) as policy:
                    assert policy.attempts == 1 and policy.connect_timeout == PROBE_CONNECT
                    await release.wait()
                    raise Unreachable("still gone")

        async def beside() -> None:
            try:
                async with down.request(WHERE, POLICY):
                    outcomes.append("sent")
            except Unreachable as exc:
                outcomes.append(str(exc))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(probe)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(beside)
            await trio.testing.wait_all_tasks_blocked()
            assert outcomes == []  # waiting for the probe, not failed untried
            release.set()
        assert outcomes == ["still gone (a request just now found it still down)"]
        clock.now += 5.0  # the window is over: requests get their whole policy again
        assert await attempts(down) == 4

    trio.run(main)


def test_any_reply_shows_the_origin_is_up() -> None:
    async def main() -> None:
        down = DownOrigins(5.0, Clock())
        await fail(down, Unreachable("gone"))
        await fail(down, BadReply("a bad reply is a reply"))  # the probe
        assert await attempts(down) == 4

    trio.run(main)
