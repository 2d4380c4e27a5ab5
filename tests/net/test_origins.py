"""Origins compared exactly (IPv6 included), and tokens kept to theirs."""

import pytest

from arkfs.net.bearer import OriginTokens
from arkfs.net.client import _origin, origin


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://[2001:db8::5]:8443/ark:1/x", "http://[2001:db8::5]:8443"),
        ("http://[2001:db8::5:8443]/ark:1/x", "http://[2001:db8::5:8443]"),
        ("http://[2001:DB8::5]/", "http://[2001:db8::5]"),
        ("https://Example.org:443/x", "https://example.org"),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
    ],
)
def test_origin_keeps_ipv6_brackets_and_drops_default_ports(url: str, expected: str) -> None:
    assert origin(url) == expected


def test_ipv6_host_and_port_are_not_confused_with_a_longer_address() -> None:
    assert origin("http://[2001:db8::5]:8443") != origin("http://[2001:db8::5:8443]")


def test_a_token_for_an_ipv6_origin_goes_there_only() -> None:
    tokens = OriginTokens({"http://[2001:db8::5]:8443": "s3cret"})
    assert tokens.token_for("http://[2001:db8::5]:8443/ark:1/x") == "s3cret"
    assert tokens.token_for("http://[2001:db8::5:8443]/ark:1/x") is None
    assert tokens.token_for("http://[2001:db8::5]/ark:1/x") is None
    assert tokens.token_for("http://[2001:db8::5]:8444/ark:1/x") is None


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8741/v1/xorb-data/ab?expires=1&sig=2",
        "http://Example.org?next=/elsewhere",
        "https://user:pw@example.org:443#frag/x",
        "http://[2001:DB8::5]:8443?a=b/c",
        "HTTP://EXAMPLE.ORG:80/",
        "http://exa mple.org/x",
        "not a url",
        "http://[::1/x",
        "",
    ],
)
def test_the_origin_of_a_url_is_that_of_its_scheme_and_authority_parsed_whole(url: str) -> None:
    assert origin(url) == _origin.__wrapped__(url)  # origin's cache key cuts the URL
