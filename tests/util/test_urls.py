"""The one rule for writing URLs down (arkfs.util.urls): no userinfo, no signed query."""

import pytest

from arkfs.server.signing import SIGNATURE
from arkfs.util.urls import SECRET_PARAMS, without_secrets

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`


@pytest.mark.parametrize(
    ("url", "kept"),
    [
        ("https://user:pw@h.example/a?x=1", "https://h.example/a?x=1"),
        ("https://h.example/o?X-Amz-Signature=abc&X-Amz-Expires=60", "https://h.example/o"),
        ("https://h.example/o?token=s3cret", "https://h.example/o"),
        ("/v1/xorbs/x?sig=abc&exp=1", "/v1/xorbs/x"),
        ("https://h.example/o?Key-Pair-Id=K&Signature=S&Policy=P", "https://h.example/o"),
        ("http://[2001:db8::5]:8443/a?page=2", "http://[2001:db8::5]:8443/a?page=2"),
    ],
)
def test_without_secrets(url: str, kept: str) -> None:
    assert without_secrets(url) == kept


def test_the_servers_own_signature_parameter_is_secret() -> None:
    assert SIGNATURE in SECRET_PARAMS
