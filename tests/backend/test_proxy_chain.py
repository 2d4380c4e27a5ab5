"""The order proxies of a `proxies` list are tried in (arkfs.net.proxies), as CVMFS does."""

import pytest

from arkfs.net.proxies import RESET_AFTER, ProxyChain, ProxyError, parse


def test_failed_proxies_go_last_until_reset() -> None:
    now = [0.0]
    chain = ProxyChain(parse(["http://a:3128", "http://b:3128", "DIRECT"], "t"), lambda: now[0])
    assert chain.order() == ["http://a:3128", "http://b:3128", None]
    chain.failed("http://a:3128")
    assert chain.order() == ["http://b:3128", None, "http://a:3128"]
    chain.failed("http://b:3128")
    assert chain.order() == [None, "http://a:3128", "http://b:3128"]
    now[0] = RESET_AFTER + 1  # the first is tried first again, as after CVMFS_PROXY_RESET_AFTER
    assert chain.order() == ["http://a:3128", "http://b:3128", None]


@pytest.mark.parametrize("bad", ["squid:3128", "https://a:3128", "http://a:3128/path", ""])
def test_what_is_not_a_proxy_is_refused(bad: str) -> None:
    with pytest.raises(ProxyError, match="where"):
        parse([bad], "where")
