"""Signed, expiring xorb URLs: an HMAC over the xorb hash and the expiry time.

A signed URL lets a reader fetch xorb bytes with no Authorization header, as hf_xet does
with the URLs in `fetch_info`, while expired or tampered URLs are refused. Expiry times are
rounded up to a signing window (a third of the ttl), so every reader within one window gets
the same URL of a xorb, and a site cache (squid), which keys on the whole URL, can hit.
"""

import hashlib
import hmac
import secrets
import time
from urllib.parse import urlencode

SIGNATURE = "sig"  # the query parameter of a signed URL that holds its signature


class UrlSigner:
    """Signs and checks (xorb hash string, expiry) pairs with a secret key."""

    def __init__(self, key: bytes | None = None, ttl: int = 900) -> None:
        self.key = key or secrets.token_bytes(32)
        self.ttl = ttl

    def _mac(self, name: str, expires: int) -> str:
        return hmac.new(self.key, f"{name}\n{expires}".encode(), hashlib.sha256).hexdigest()

    def sign(
        self, base_url: str, name: str, now: float | None = None, route: str = "xorb-data"
    ) -> tuple[str, int]:
        """The signed URL of xorb `name` under base_url's /v1/{route}, and when it expires
        (Unix seconds). The route is not signed: sign each route with a key of its own."""
        window = max(1, self.ttl // 3)
        earliest = int(now if now is not None else time.time()) + self.ttl
        expires = -(-earliest // window) * window  # valid for ttl at least, ttl + window at most
        query = urlencode({"expires": expires, SIGNATURE: self._mac(name, expires)})
        return f"{base_url.rstrip('/')}/v1/{route}/{name}?{query}", expires

    def check(self, name: str, expires: str, sig: str, now: float | None = None) -> int:
        """Seconds the signature stays valid; raise PermissionError if expired or forged."""
        try:
            exp = int(expires)
        except ValueError:
            raise PermissionError("malformed expiry in signed URL") from None
        if not hmac.compare_digest(self._mac(name, exp), sig):
            raise PermissionError("bad signature on xorb URL")
        left = exp - int(now if now is not None else time.time())
        if left <= 0:
            raise PermissionError("xorb URL expired; ask for a new reconstruction")
        return left
