"""Bearer tokens and what they grant, as EZID grants shoulders to accounts: from a tokens
file (`TOKEN SCOPE...` per line), or derived short-lived tokens that `GET /v1/token` issues
(arkfs.server.tokens).

Scopes: `read`; `write` (read, upload, and bind any ARK this server is authoritative for);
`write:NAAN/SHOULDER` (read, upload, and bind, publish or withdraw only ARKs whose Name
starts with SHOULDER, under NAAN; `write:NAAN` is the whole NAAN; several may be given);
`admin` (everything `write` may do, and the operator's routes). A derived write token from
a shoulder-bound token may upload to the CAS but binds nothing."""

import enum
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from arkfs.ark.errors import ArkError
from arkfs.ark.identifier import Ark
from arkfs.ark.normalization import parse
from arkfs.server.tokens import PREFIX, UPLOAD, TokenError, TokenIssuer, is_derived

TOKEN_SCOPES = "`read`, `write`, `write:NAAN/SHOULDER` (several) or `admin`"


class Scope(enum.IntEnum):
    """What a token may do; each includes those below it (CAS API, Authentication)."""

    READ = 1
    WRITE = 2
    ADMIN = 3


class TokensFileError(ValueError):
    """A tokens file line that is not `TOKEN SCOPE...`."""


class AuthError(Exception):
    """A request without the token its operation needs; status is 401 or 403."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        super().__init__(message)


@dataclass(frozen=True)
class Shoulder:
    """Where a `write:NAAN/SHOULDER` scope may bind: Names under naan starting with prefix
    (normalized; '' for the whole NAAN)."""

    naan: str
    prefix: str

    @classmethod
    def parse(cls, text: str) -> "Shoulder":
        """`NAAN/SHOULDER` or `NAAN`, normalized; ArkError if malformed."""
        naan, _, prefix = text.removeprefix("ark:").partition("/")
        ark = parse(f"ark:{naan}/{prefix or 'x'}")
        return cls(ark.naan, ark.name if prefix else "")

    def holds(self, ark: Ark) -> bool:
        """Is ark under this shoulder?"""
        return ark.naan == self.naan and ark.name.startswith(self.prefix)

    def __str__(self) -> str:
        return f"ark:{self.naan}/{self.prefix}"


class OutsideShoulders(AuthError):
    """403: a bind, publish or withdrawal of an ARK outside the token's shoulders, or
    outside the NAANs this server is authoritative for; answered as JSON naming both."""

    def __init__(self, ark: Ark, message: str, granted: tuple[str, ...]) -> None:
        self.ark, self.shoulder, self.granted = ark, shoulder_of(ark), granted
        super().__init__(403, message)


def shoulder_of(ark: Ark) -> str:
    """`ark:NAAN/SHOULDER` of ark (its primordinal shoulder; the NAAN alone without one)."""
    return f"ark:{ark.naan}/{ark.shoulder}" if ark.shoulder else f"ark:{ark.naan}"


Grants = tuple[dict[str, Scope], dict[str, tuple[Shoulder, ...]]]


def parse_grants(text: str, source: str = "tokens file") -> Grants:
    """Parse `TOKEN SCOPE...` lines: each token's scope, and the shoulders of the tokens
    that write only under some; blank lines and # comments are skipped."""
    tokens: dict[str, Scope] = {}
    shoulders: dict[str, tuple[Shoulder, ...]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        token, *scopes = line.split()
        where = f"{source} line {number}"
        if not scopes:
            raise TokensFileError(f"{where}: expected `TOKEN SCOPE...`, SCOPE {TOKEN_SCOPES}")
        if is_derived(token):
            raise TokensFileError(
                f"{where}: tokens starting with {PREFIX}. are reserved "
                "for tokens the server derives; choose another"
            )
        levels, limited = [], []
        for scope in scopes:
            name, colon, shoulder = scope.partition(":")
            if name not in ("read", "write", "admin") or (colon and name != "write"):
                raise TokensFileError(f"{where}: unknown scope {scope!r}: use {TOKEN_SCOPES}")
            if colon:
                try:
                    limited.append(Shoulder.parse(shoulder))
                except (ArkError, ValueError) as exc:
                    raise TokensFileError(f"{where}: bad shoulder {shoulder!r}: {exc}") from None
            else:
                levels.append(Scope[name.upper()])
        tokens[token] = max([*levels, *([Scope.WRITE] if limited else [])])
        if limited and tokens[token] is Scope.WRITE and Scope.WRITE not in levels:
            shoulders[token] = tuple(limited)
    return tokens, shoulders


def parse_tokens(text: str, source: str = "tokens file") -> dict[str, Scope]:
    """Each token's scope in a tokens file (parse_grants without the shoulders)."""
    return parse_grants(text, source)[0]


@dataclass
class Authorizer:
    """Decides whether a request's Authorization header grants a scope."""

    tokens: dict[str, Scope] = field(default_factory=dict)
    open_read: bool = False
    issuer: TokenIssuer = field(default_factory=TokenIssuer)
    shoulders: dict[str, tuple[Shoulder, ...]] = field(default_factory=dict)  # else: any
    naans: frozenset[str] | None = None  # the NAANs this server binds (serve --naan); None: any

    @classmethod
    def from_file(
        cls,
        path: Path | None,
        open_read: bool,
        issuer: TokenIssuer | None = None,
        naans: frozenset[str] | None = None,
    ) -> "Authorizer":
        """Load a tokens file (or none: then only open reads and derived tokens work)."""
        tokens, shoulders = parse_grants(path.read_text(), str(path)) if path else ({}, {})
        return cls(tokens, open_read, issuer or TokenIssuer(), shoulders, naans)

    def require(
        self, header: str | None, scope: Scope, derived: bool = True, anonymous: bool = True
    ) -> str | None:
        """Return the token used (None for an open read) or raise AuthError.

        derived=False refuses derived tokens, so one cannot be renewed into another forever;
        anonymous=False wants a token even where --open-read lets anyone read.
        """
        if scope is Scope.READ and self.open_read and anonymous:
            return None
        return self._checked(header, scope, derived)[0]

    def granted(self, header: str | None) -> Scope:
        """The scope of the bearer token in header; AuthError (401) without a valid one."""
        return self._checked(header, Scope.READ, derived=True)[1]

    def _checked(self, header: str | None, scope: Scope, derived: bool) -> tuple[str, Scope]:
        """The bearer token in header and the scope it grants, at least scope; AuthError
        otherwise."""
        if not header or not header.startswith("Bearer "):
            raise AuthError(401, "no bearer token sent")
        token = header[len("Bearer ") :].strip()
        granted = self._scope(token, derived)
        if granted is None:
            raise AuthError(401, "unknown or expired token")
        if granted < scope:
            raise AuthError(
                403, f"this token has {granted.name.lower()} scope, {scope.name.lower()} needed"
            )
        return token, granted

    def require_bind(self, header: str | None, ark: Ark, action: str = "bind") -> None:
        """Raise AuthError unless the token may bind (publish, withdraw) ark: write scope,
        ark under one of its shoulders and in a NAAN of this server (OutsideShoulders, 403)."""
        token = self.require(header, Scope.WRITE)
        assert token is not None  # write is never anonymous
        if self.naans is not None and ark.naan not in self.naans:
            raise OutsideShoulders(
                ark,
                f"this server may not {action} {ark}: it is authoritative for NAAN "
                f"{', '.join(sorted(self.naans))} only, not {ark.naan}",
                tuple(f"ark:{n}/" for n in sorted(self.naans)),
            )
        granted = self.granted_shoulders(token)
        if granted is not None and not any(s.holds(ark) for s in granted):
            names = tuple(str(s) for s in granted)
            raise OutsideShoulders(
                ark,
                f"this token may not {action} {ark}: shoulder {shoulder_of(ark)} is not "
                f"among its shoulders ({', '.join(names) or 'none'})",
                names,
            )

    def granted_shoulders(self, token: str) -> tuple[Shoulder, ...] | None:
        """The shoulders token may bind under (None: any); () for an upload-only token."""
        if is_derived(token):
            return () if self.issuer.check(token) == UPLOAD else None
        for known, shoulders in self.shoulders.items():
            if secrets.compare_digest(known.encode(), token.encode()):
                return shoulders
        return None

    def derived_scope(self, token: str, scope: str) -> str:
        """The scope to issue, for /v1/token/{scope}, to a token of the tokens file: a
        shoulder-bound token's write becomes upload (CAS only, no binding)."""
        return UPLOAD if scope == "write" and self.granted_shoulders(token) else scope

    def _scope(self, token: str, derived: bool) -> Scope | None:
        """The scope token grants (None if unknown), or AuthError for a bad derived one."""
        if not is_derived(token):
            for known, scope in self.tokens.items():
                if secrets.compare_digest(known.encode(), token.encode()):
                    return scope
            return None
        if not derived:
            raise AuthError(403, "a token from /v1/token cannot get another: use your own token")
        try:
            granted = self.issuer.check(token)
        except TokenError as exc:
            raise AuthError(401, str(exc)) from None
        return Scope.WRITE if granted == UPLOAD else Scope[granted.upper()]
