"""Resolver discovery against real servers on 127.0.0.1: registry records, redirect chains,
/.well-known/ark, the fallback, the registry's disk copy, and tokens kept to their origin."""

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from arkfs.ark.normalization import parse
from arkfs.backend.base import Unreachable
from arkfs.resolve.discover import MAX_HOPS, NoResolver, ResolveError, Resolver, Trace
from arkfs.resolve.registries import REFRESH, RegistryUnavailable
from arkfs.resolve.tokens import OriginTokens
from tests.support.redirector import Redirector, redirector


@pytest.fixture
def n2t() -> Iterator[Redirector]:
    """The N2T-like first resolver."""
    with redirector() as r:
        yield r


@pytest.fixture
def nma() -> Iterator[Redirector]:
    """The responder: an ARK service under /arks/, announced by /.well-known/ark."""
    with redirector() as r:
        r.pages["/.well-known/ark"] = "/arks/\n# a resolver\n"
        r.pages["/arks/ark:/12345/x6np?info"] = "erc:\nwho: Lab\nwhat: Tables\n"
        yield r


def write_registry(path: Path, records: list[tuple[str, str, str]]) -> str:
    """A JSON registry of (naan, shoulder, template) records."""
    data = [
        {"rtype": "PublicNAANShoulder", "naan": n, "shoulder": s, "target": {"url": t}}
        if s
        else {"rtype": "PublicNAAN", "what": n, "target": {"url": t, "http_code": 302}}
        for n, s, t in records
    ]
    path.write_text(json.dumps({"metadata": {}, "data": data}))
    return str(path)


def resolve(
    sources: list[str], ark: str, tmp: Path, fallback: str | None = None, **tokens: str
) -> Trace:
    async def main() -> Trace:
        resolver = Resolver(sources, fallback, tmp / "cache", OriginTokens(tokens))
        try:
            return await resolver.resolve(parse(ark), info=True)
        finally:
            await resolver.aclose()

    return trio.run(main)


def test_a_naan_record_leads_through_a_redirect_hop_to_the_service(
    n2t: Redirector, nma: Redirector, tmp_path: Path
) -> None:
    n2t.redirect("/ark:", f"{nma.url}/arks/ark:")
    registry = write_registry(tmp_path / "r.json", [("12345", "", n2t.url + "/ark:/${content}")])
    trace = resolve([registry], "ark:12345/x6np", tmp_path)
    assert [(h.url, h.status) for h in trace.hops] == [
        (f"{n2t.url}/ark:/12345/x6np", 302),
        (f"{nma.url}/arks/ark:/12345/x6np", 404),
    ]
    assert trace.responder == nma.url and trace.service_path == "/arks/"
    assert trace.service == nma.url + "/arks"
    assert trace.record is not None and trace.record.kind == "naan"
    assert trace.info is not None and "who: Lab" in trace.info


def test_a_shoulder_record_routes_its_arks_elsewhere(
    n2t: Redirector, nma: Redirector, tmp_path: Path
) -> None:
    registry = write_registry(
        tmp_path / "r.json",
        [("12345", "", n2t.url + "/ark:${content}"), ("12345", "x6", nma.url + "/arks/ark:${pid}")],
    )
    under = resolve([registry], "ark:12345/x6np", tmp_path)
    beside = resolve([registry], "ark:12345/b7", tmp_path)
    assert under.record is not None and str(under.record) == "shoulder record 12345/x6"
    assert under.responder == nma.url
    assert beside.record is not None and str(beside.record) == "naan record 12345"
    assert beside.responder == n2t.url and beside.service == n2t.url  # no well-known: by URL


def test_earlier_registries_win_and_anvl_works_too(
    n2t: Redirector, nma: Redirector, tmp_path: Path
) -> None:
    anvl = tmp_path / "naan_registry.txt"
    anvl.write_text(f"naa:\nwho: Lab\nwhat: 12345\nwhere: {nma.url}/arks/\n")
    json_registry = write_registry(tmp_path / "r.json", [("12345", "", n2t.url + "/${pid}")])
    assert resolve([str(anvl), json_registry], "ark:12345/x6np", tmp_path).responder == nma.url
    assert resolve([json_registry, str(anvl)], "ark:12345/x6np", tmp_path).responder == n2t.url


def test_unknown_naans_go_to_the_fallback_or_nowhere(n2t: Redirector, tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "r.json", [("b1234", "", n2t.url + "/${pid}")])
    trace = resolve([registry], "ark:12345/x6np", tmp_path, fallback=n2t.url + "/")
    assert trace.via == "fallback" and trace.hops[0].url == f"{n2t.url}/ark:12345/x6np"
    with pytest.raises(NoResolver, match="no NAAN registry has a record for 12345"):
        resolve([registry], "ark:12345/x6np", tmp_path)


def test_loops_and_long_chains_are_cut(n2t: Redirector, tmp_path: Path) -> None:
    n2t.redirect("/loop/", f"{n2t.url}/loop/")  # /loop/a -> /loop/a
    for i in range(MAX_HOPS + 1):
        n2t.redirect(f"/hop{i}/", f"{n2t.url}/hop{i + 1}/", status=(301, 302, 303, 307, 308)[i % 5])
    registry = write_registry(
        tmp_path / "r.json",
        [("12345", "", n2t.url + "/loop/${value}"), ("b1234", "", n2t.url + "/hop0/${value}")],
    )
    with pytest.raises(ResolveError, match="redirect loop"):
        resolve([registry], "ark:12345/a", tmp_path)
    with pytest.raises(ResolveError, match=f"more than {MAX_HOPS} redirects"):
        resolve([registry], "ark:b1234/a", tmp_path)
    n2t.routes.pop(f"/hop{MAX_HOPS}/")  # exactly MAX_HOPS redirects are followed
    assert len(resolve([registry], "ark:b1234/a", tmp_path).hops) == MAX_HOPS + 1


def test_a_token_goes_to_its_own_origin_only_even_across_redirects(
    n2t: Redirector, nma: Redirector, tmp_path: Path
) -> None:
    n2t.redirect("/ark:", f"{nma.url}/arks/ark:")
    registry = write_registry(tmp_path / "r.json", [("12345", "", n2t.url + "/ark:${content}")])
    trace = resolve([registry], "ark:12345/x6np", tmp_path, **{n2t.url: "n2t-token"})
    assert trace.responder == nma.url
    assert n2t.auth_seen() == {"Bearer n2t-token"}
    assert nma.auth_seen() == {None}


def test_a_registry_url_is_kept_on_disk_refreshed_daily_and_used_offline(
    n2t: Redirector, tmp_path: Path
) -> None:
    with redirector() as host:
        host.pages["/naans.json"] = json.dumps(
            [{"what": "12345", "target": {"url": n2t.url + "/${pid}"}}]
        )
        url = host.url + "/naans.json"
        assert resolve([url], "ark:12345/x", tmp_path).responder == n2t.url
        assert resolve([url], "ark:12345/x", tmp_path).responder == n2t.url
        assert [s.path for s in host.seen] == ["/naans.json"]  # the copy is fresh: no fetch
        copies = list((tmp_path / "cache/registries").iterdir())
        old = time.time() - REFRESH - 60
        os.utime(copies[0], (old, old))
        resolve([url], "ark:12345/x", tmp_path)
        assert [s.path for s in host.seen] == ["/naans.json"] * 2  # a day old: fetched again
        os.utime(copies[0], (old, old))
    # The registry's host is gone: its stale copy still resolves.
    assert resolve([url], "ark:12345/x", tmp_path).responder == n2t.url
    with pytest.raises(RegistryUnavailable, match="no copy of it"):
        resolve([url], "ark:12345/x", tmp_path / "elsewhere")


def test_an_unreachable_hop_fails_in_bounded_time(tmp_path: Path) -> None:
    with redirector() as gone:
        dead = gone.url
    registry = write_registry(tmp_path / "r.json", [("12345", "", dead + "/${pid}")])
    with pytest.raises(Unreachable, match="cannot reach"):
        resolve([registry], "ark:12345/x", tmp_path)


def test_a_registry_that_cannot_be_read_is_skipped_for_a_while(
    n2t: Redirector, tmp_path: Path
) -> None:
    with redirector() as host:  # it has no /naans.json: 404
        good = write_registry(tmp_path / "r.json", [("12345", "", n2t.url + "/${pid}")])

        async def main() -> None:
            resolver = Resolver([host.url + "/naans.json", good], None, tmp_path / "cache")
            try:
                for _ in range(2):
                    trace = await resolver.resolve(parse("ark:12345/x"))
                    assert trace.source == good and trace.responder == n2t.url
            finally:
                await resolver.aclose()

        trio.run(main)
        assert [s.path for s in host.seen] == ["/naans.json"]  # asked once, then skipped
