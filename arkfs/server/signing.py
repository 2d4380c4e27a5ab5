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

from arkfs.server.tokens import derive_key

SIGNATURE = "sig"  # the query parameter of a signed URL that holds its signature
DEFAULT_URL_TTL = 900  # seconds a signed URL stays valid at least (`serve --url-ttl`)


class UrlSigner:
    """Signs and checks (xorb hash string, expiry) pairs with a secret key."""

    def __init__(
        self, key: bytes | None = None, ttl: int = DEFAULT_URL_TTL, accepted: tuple[bytes, ...] = ()
    ) -> None:
        """key signs; it and the accepted keys (older ones, during a rotation) check."""
        self.key = key or secrets.token_bytes(32)
        self.ttl = ttl
        self.accepted = accepted

    def _mac(self, name: str, expires: int, key: bytes | None = None) -> str:
        message = f"{name}\n{expires}".encode()
        return hmac.new(key or self.key, message, hashlib.sha256).hexdigest()

    def derived(self, purpose: str) -> "UrlSigner":
        """A signer of the same ttl whose every key is derived for purpose (tokens.py)."""
        return UrlSigner(
            derive_key(self.key, purpose),
            self.ttl,
            tuple(derive_key(k, purpose) for k in self.accepted),
        )

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
        if not any(
            hmac.compare_digest(self._mac(name, exp, key), sig)
            for key in (self.key, *self.accepted)
        ):
            raise PermissionError("bad signature on xorb URL")
        left = exp - int(now if now is not None else time.time())
        if left <= 0:
            raise PermissionError("xorb URL expired; ask for a new reconstruction")
        return left
