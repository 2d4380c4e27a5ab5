"""Short-lived derived tokens: `arkfs1.<scope>.<exp>.<hmac>`, signed with the server's key.

`GET /v1/token[/{scope}]` hands them out, like the Hugging Face Hub's xet token route, so a
client can give the CAS (or hf_xet) a token that expires instead of its long-lived one.
The token names its scope and expiry in the clear; the HMAC over both is what makes it
valid. Nothing here logs a token, and error messages never repeat one.
"""

import hashlib
import hmac
import secrets
import time

PREFIX = "arkfs1"
SCOPES = ("read", "write")  # what a client asks /v1/token for
UPLOAD = "upload"  # write to the CAS only: issued for `write` to a shoulder-bound token
_ISSUED = (*SCOPES, UPLOAD)
DEFAULT_TTL = 3600
MAX_EXP_DIGITS = 20  # an expiry in Unix seconds; Python will not convert past 4,300 digits


class TokenError(Exception):
    """A derived token that is malformed, forged or expired; the message says which."""


def derive_key(key: bytes, purpose: str) -> bytes:
    """A subkey of key for one purpose, so one secret can sign tokens and URLs apart."""
    return hmac.new(key, f"arkfs {purpose}".encode(), hashlib.sha256).digest()


def is_derived(token: str) -> bool:
    """Does token look like a derived token (rather than one from a tokens file)?"""
    return token.startswith(PREFIX + ".")


class TokenIssuer:
    """Issues and checks derived tokens with a secret key (random unless given)."""

    def __init__(
        self, key: bytes | None = None, ttl: int = DEFAULT_TTL, accepted: tuple[bytes, ...] = ()
    ) -> None:
        """key signs; it and the accepted keys (older ones, during a rotation) check."""
        if ttl <= 0:
            raise ValueError(f"token lifetime must be positive, got {ttl} s")
        self.key = key or secrets.token_bytes(32)
        self.ttl = ttl
        self.accepted = accepted

    def _mac(self, scope: str, exp: int, key: bytes | None = None) -> str:
        message = f"{PREFIX}.{scope}.{exp}".encode()
        return hmac.new(key or self.key, message, hashlib.sha256).hexdigest()

    def issue(self, scope: str, now: float | None = None) -> tuple[str, int]:
        """A token for scope ('read', 'write' or 'upload') and its expiry in Unix seconds."""
        if scope not in _ISSUED:
            raise ValueError(f"unknown token scope {scope!r}: use read or write")
        exp = int(time.time() if now is None else now) + self.ttl
        return f"{PREFIX}.{scope}.{exp}.{self._mac(scope, exp)}", exp

    def check(self, token: str, now: float | None = None) -> str:
        """The scope a derived token grants; TokenError if malformed, forged or expired."""
        parts = token.split(".")
        if not (
            len(parts) == 4
            and parts[0] == PREFIX
            and parts[1] in _ISSUED
            and parts[2].isascii()
            and parts[2].isdigit()
            and len(parts[2]) <= MAX_EXP_DIGITS
        ):
            raise TokenError("malformed token: ask /v1/token for a new one")
        _, scope, exp_text, mac = parts
        keys = (self.key, *self.accepted)
        if not (
            mac.isascii()
            and any(hmac.compare_digest(self._mac(scope, int(exp_text), k), mac) for k in keys)
        ):
            raise TokenError(
                "token not signed by this server (altered, or the server restarted without "
                "--key-file): ask /v1/token for a new one"
            )
        if int(exp_text) <= int(time.time() if now is None else now):
            raise TokenError("expired token: ask /v1/token for a new one")
        return scope
