"""Bearer tokens with read and write scopes: from a tokens file (`TOKEN SCOPE` per line),
or derived short-lived tokens that `GET /v1/token` issues (arkfs.server.tokens)."""

import enum
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from arkfs.server.tokens import PREFIX, TokenError, TokenIssuer, is_derived


class Scope(enum.IntEnum):
    """What a token may do; write includes read (CAS API, Authentication)."""

    READ = 1
    WRITE = 2


class TokensFileError(ValueError):
    """A tokens file line that is not `TOKEN read|write`."""


class AuthError(Exception):
    """A request without the token its operation needs; status is 401 or 403."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        super().__init__(message)


def parse_tokens(text: str, source: str = "tokens file") -> dict[str, Scope]:
    """Parse `TOKEN SCOPE` lines; blank lines and # comments are skipped."""
    tokens: dict[str, Scope] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 2 or parts[1] not in ("read", "write"):
            raise TokensFileError(f"{source} line {number}: expected `TOKEN read` or `TOKEN write`")
        if is_derived(parts[0]):
            raise TokensFileError(
                f"{source} line {number}: tokens starting with {PREFIX}. are reserved "
                "for tokens the server derives; choose another"
            )
        tokens[parts[0]] = Scope.READ if parts[1] == "read" else Scope.WRITE
    return tokens


@dataclass
class Authorizer:
    """Decides whether a request's Authorization header grants a scope."""

    tokens: dict[str, Scope] = field(default_factory=dict)
    open_read: bool = False
    issuer: TokenIssuer = field(default_factory=TokenIssuer)

    @classmethod
    def from_file(
        cls, path: Path | None, open_read: bool, issuer: TokenIssuer | None = None
    ) -> "Authorizer":
        """Load a tokens file (or none: then only open reads and derived tokens work)."""
        tokens = parse_tokens(path.read_text(), str(path)) if path else {}
        return cls(tokens, open_read, issuer or TokenIssuer())

    def require(
        self, header: str | None, scope: Scope, derived: bool = True, anonymous: bool = True
    ) -> str | None:
        """Return the token used (None for an open read) or raise AuthError.

        derived=False refuses derived tokens, so one cannot be renewed into another forever;
        anonymous=False wants a token even where --open-read lets anyone read.
        """
        if scope is Scope.READ and self.open_read and anonymous:
            return None
        if not header or not header.startswith("Bearer "):
            raise AuthError(401, "missing bearer token: pass --token or set ARKFS_TOKEN")
        token = header[len("Bearer ") :].strip()
        if is_derived(token):
            granted: Scope | None = self._derived_scope(token, derived)
        else:
            granted = next(
                (
                    s
                    for t, s in self.tokens.items()
                    if secrets.compare_digest(t.encode(), token.encode())
                ),
                None,
            )
        if granted is None:
            raise AuthError(401, "unknown or expired token")
        if granted < scope:
            raise AuthError(
                403, f"this token has {granted.name.lower()} scope, {scope.name.lower()} needed"
            )
        return token

    def _derived_scope(self, token: str, allowed: bool) -> Scope:
        """The scope a derived token grants, or AuthError."""
        if not allowed:
            raise AuthError(403, "a token from /v1/token cannot get another: use your own token")
        try:
            return Scope[self.issuer.check(token).upper()]
        except TokenError as exc:
            raise AuthError(401, str(exc)) from None
