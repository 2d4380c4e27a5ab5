"""Resolver discovery against real servers on 127.0.0.1: registry records, redirect chains,
/.well-known/ark, the fallback, the registry's disk copy, and tokens kept to their origin."""

import ipaddress
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from arkfs.ark.normalization import parse
from arkfs.backend.base import Unreachable
from arkfs.net.bearer import OriginTokens
from arkfs.resolver.destinations import PrivateDestination, is_public
from arkfs.resolver.discover import (
    MAX_HOPS,
    NoResolver,
    NotFoundThere,
    ResolveError,
    Resolver,
    Trace,
)
from arkfs.resolver.registries import REFRESH, RegistryUnavailable
from tests.support.redirector import Redirector, redirector


@pytest.fixture
def n2t() -> Iterator[Redirector]:
    """The N2T-like first resolver."""
    with redirector() as r:
        r.found.append("/")
        yield r


@pytest.fixture
def nma() -> Iterator[Redirector]:
    """The responder: an ARK service under /arks/, announced by /.well-known/ark."""
    with redirector() as r:
        r.pages["/.well-known/ark"] = "/arks/\n# a resolver\n"
        r.pages["/arks/ark:/12345/x6np?info"] = "erc:\nwho: Lab\nwhat: Tables\n"
        r.found.append("/arks/")
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
    sources: list[str],
    ark: str,
    tmp: Path,
    fallback: str | None = None,
    allow_private: bool = True,
    tokens: dict[str, str] | None = None,
) -> Trace:
    async def main() -> Trace:
        resolver = Resolver(
            sources,
            fallback,
            tmp / "cache",
            OriginTokens(tokens or {}),
            allow_private=allow_private,
        )
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
        (f"{nma.url}/arks/ark:/12345/x6np", 200),
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
    trace = resolve([registry], "ark:12345/x6np", tmp_path, tokens={n2t.url: "n2t-token"})
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
            resolver = Resolver(
                [host.url + "/naans.json", good], None, tmp_path / "cache", allow_private=True
            )
            try:
                for _ in range(2):
                    trace = await resolver.resolve(parse("ark:12345/x"))
                    assert trace.source == good and trace.responder == n2t.url
            finally:
                await resolver.aclose()

        trio.run(main)
        assert [s.path for s in host.seen] == ["/naans.json"]  # asked once, then skipped


def test_a_registry_target_on_a_private_address_is_refused_unless_allowed(
    n2t: Redirector, tmp_path: Path
) -> None:
    registry = write_registry(tmp_path / "r.json", [("12345", "", n2t.url + "/${pid}")])
    with pytest.raises(PrivateDestination, match=r"registry's target leads to http://127\.0\.0\.1"):
        resolve([registry], "ark:12345/x", tmp_path, allow_private=False)
    assert n2t.seen == []
    assert resolve([registry], "ark:12345/x", tmp_path).responder == n2t.url


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "[::ffff:127.0.0.1]"])
def test_a_redirect_to_a_private_address_is_refused_unless_allowed(
    n2t: Redirector, nma: Redirector, tmp_path: Path, host: str
) -> None:
    # The fallback is configured, so trusted as given; where it redirects is not.
    n2t.redirect("/ark:", nma.url.replace("127.0.0.1", host) + "/arks/ark:")
    with pytest.raises(PrivateDestination, match="a redirect leads to"):
        resolve([], "ark:12345/x6np", tmp_path, fallback=n2t.url, allow_private=False)
    assert nma.seen == []
    if host != "[::ffff:127.0.0.1]":  # the loopback server listens on IPv4 only
        trace = resolve([], "ark:12345/x6np", tmp_path, fallback=n2t.url)
        assert trace.status == 200


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("127.0.0.1", False), ("10.1.2.3", False), ("172.16.0.1", False),
        ("192.168.1.1", False), ("169.254.169.254", False), ("100.64.0.1", False),
        ("0.0.0.0", False), ("::1", False), ("::", False), ("fc00::1", False),
        ("fd12::1", False), ("fe80::1", False), ("::ffff:10.0.0.1", False),
        ("::ffff:127.0.0.1", False), ("2002:7f00:1::1", False), ("64:ff9b::a00:1", False),
        ("224.0.0.1", False), ("93.184.215.14", True), ("2606:4700::1", True),
        ("::ffff:93.184.215.14", True),
    ],
)  # fmt: skip
def test_which_addresses_are_public(address: str, public: bool) -> None:
    assert is_public(ipaddress.ip_address(address)) is public


def test_a_404_from_the_last_resolver_is_a_failure(n2t: Redirector, tmp_path: Path) -> None:
    with redirector() as last:  # knows no ARK: 404 to everything
        n2t.redirect("/ark:", f"{last.url}/ark:")
        with pytest.raises(NotFoundThere, match=f"last resolver, {last.url}, answered 404"):
            resolve([], "ark:12345/x6np", tmp_path, fallback=n2t.url)


def test_info_comes_from_the_arks_resolver_not_the_landing_page(
    n2t: Redirector, nma: Redirector, tmp_path: Path
) -> None:
    with redirector() as site:  # the landing page the resolver sends readers to
        site.pages["/page.html"] = "<!doctype html><html>a landing page</html>"
        site.pages["/page.html?info"] = "<!doctype html><html>a landing page</html>"
        n2t.redirect("/ark:", f"{nma.url}/arks/ark:")
        nma.redirect("/arks/ark:/12345/x6np", f"{site.url}/page.html")
        registry = write_registry(
            tmp_path / "r.json", [("12345", "", n2t.url + "/ark:/${content}")]
        )
        trace = resolve([registry], "ark:12345/x6np", tmp_path)
        assert trace.final_url == f"{site.url}/page.html" and trace.status == 200
        assert trace.info_from == f"{nma.url}/arks/ark:/12345/x6np?info"
        assert trace.info is not None and "who: Lab" in trace.info
        assert all("info" not in s.path for s in site.seen)


@pytest.mark.parametrize(
    "reply", ["<!doctype html><html>landing</html>", "%PDF-1.4\n\x00\x01\x02binary", "x" * 2**21]
)
def test_a_reply_that_is_no_record_is_no_metadata(
    n2t: Redirector, tmp_path: Path, reply: str
) -> None:
    n2t.pages["/ark:12345/x6np?info"] = reply
    trace = resolve([], "ark:12345/x6np", tmp_path, fallback=n2t.url)
    assert trace.info_from == f"{n2t.url}/ark:12345/x6np?info" and trace.info is None
    assert "  no metadata from this resolver" in trace.lines()
    assert reply[:20] not in "\n".join(trace.lines())


def test_an_inflected_ark_carries_its_inflection_along_the_chain(
    n2t: Redirector, nma: Redirector, tmp_path: Path
) -> None:
    n2t.redirect("/ark:", f"{nma.url}/arks/ark:")
    registry = write_registry(tmp_path / "r.json", [("12345", "", n2t.url + "/ark:/${content}")])
    trace = resolve([registry], "ark:12345/x6np?info", tmp_path)
    assert trace.hops[0].url == f"{n2t.url}/ark:/12345/x6np?info"
    assert trace.final_url == f"{nma.url}/arks/ark:/12345/x6np?info"
    assert trace.info is not None and "who: Lab" in trace.info


def test_a_registry_url_may_not_redirect_to_a_private_address_unless_allowed(
    n2t: Redirector, tmp_path: Path
) -> None:
    with redirector() as given, redirector() as elsewhere:
        elsewhere.pages["/naans.json"] = json.dumps(
            [{"what": "12345", "target": {"url": n2t.url + "/${pid}"}}]
        )
        given.redirect("/naans.json", elsewhere.url + "/naans.json")
        url = given.url + "/naans.json"  # given by the user: trusted, but not its redirect
        with pytest.raises(RegistryUnavailable, match="a NAAN registry's redirect leads to"):
            resolve([url], "ark:12345/x", tmp_path, allow_private=False)
        assert elsewhere.seen == []
        assert resolve([url], "ark:12345/x", tmp_path).responder == n2t.url


@pytest.mark.parametrize("target", ["file:///etc/passwd", "gopher://127.0.0.1:70/x", "ftp://h/x"])
def test_a_redirect_to_another_scheme_is_refused_even_when_private_is_allowed(
    n2t: Redirector, tmp_path: Path, target: str
) -> None:
    n2t.redirect("/ark:", target)
    with pytest.raises(ResolveError, match="not an http"):
        resolve([], "ark:12345/x6np", tmp_path, fallback=n2t.url)
