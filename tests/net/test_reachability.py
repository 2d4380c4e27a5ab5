"""The one unreachable-endpoint rule (arkfs.net.reachability) on a fake clock, and that the
three places that avoid a dead server (remote reads, mirrors, the mount's catalog) keep it
rather than windows of their own."""

import ast
from pathlib import Path

import pytest

import arkfs
from arkfs.net.reachability import DOWN_WINDOW, Reachability, State

pytestmark = pytest.mark.unit

WHERE = "https://a.example.org"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_an_endpoint_is_up_until_it_fails() -> None:
    reach = Reachability(5.0, Clock())
    assert reach.state(WHERE) is State.UP
    assert not reach.is_down(WHERE)
    assert reach.why(WHERE) is None


def test_a_failure_is_down_for_the_window_then_due() -> None:
    clock = Clock()
    reach = Reachability(5.0, clock)
    assert reach.failed(WHERE, "connection refused")
    assert reach.state(WHERE) is State.DOWN and reach.why(WHERE) == "connection refused"
    clock.now += 4.9
    assert reach.is_down(WHERE)
    clock.now += 0.1
    assert reach.state(WHERE) is State.DUE
    assert not reach.is_down(WHERE)


def test_only_the_first_failure_is_news() -> None:
    clock = Clock()
    reach = Reachability(5.0, clock)
    assert reach.failed(WHERE, "refused")
    clock.now += 1
    assert not reach.failed(WHERE, "timed out")  # still down: nothing new to log
    assert reach.why(WHERE) == "timed out"
    clock.now += 4.5  # the window runs from the last failure
    assert reach.is_down(WHERE)


def test_a_probe_rearms_the_window_so_only_one_goes_out() -> None:
    clock = Clock()
    reach = Reachability(5.0, clock)
    reach.failed(WHERE, "refused")
    clock.now += 5
    assert reach.state(WHERE) is State.DUE
    reach.probing(WHERE)
    assert reach.state(WHERE) is State.DOWN  # every other caller of this window waits
    assert reach.why(WHERE) == "refused"
    clock.now += 5
    assert reach.state(WHERE) is State.DUE


def test_any_answer_makes_it_up_and_says_so_once() -> None:
    reach = Reachability(5.0, Clock())
    reach.failed(WHERE, "refused")
    assert reach.answered(WHERE)
    assert reach.state(WHERE) is State.UP
    assert not reach.answered(WHERE)


def test_endpoints_are_apart() -> None:
    reach = Reachability(5.0, Clock())
    reach.failed(WHERE, "refused")
    assert reach.state("https://b.example.org") is State.UP


def test_one_window_by_default() -> None:
    assert Reachability().window == DOWN_WINDOW


# The three places that avoid a dead server, and the windows of their own they once had.
USERS = ("net/retry.py", "backend/mirrors.py", "mount/names/catalog.py")
OLD_WINDOWS = {"FAIL_FAST", "DOWN_TIME", "PROBE_INTERVAL"}


@pytest.mark.parametrize("module", USERS)
def test_every_dead_server_window_is_the_one_rule(module: str) -> None:
    source = (Path(arkfs.__file__).parent / module).read_text()
    tree = ast.parse(source)
    assigned = {
        t.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        for t in node.targets
        if isinstance(t, ast.Name)
    }
    assert not assigned & OLD_WINDOWS
    imported = {
        node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
    }
    assert "arkfs.net.reachability" in imported
