"""Tokens belong to their origin: which token, if any, a request to a URL carries.

A token is looked up by the origin (scheme://host[:port]) of the very URL a request goes
to, so it never reaches another origin, and never follows a redirect to one (each hop is
its own request, looked up again).
"""

from collections.abc import Mapping

from arkfs.net.client import origin


class OriginTokens:
    """origin -> token; tokens never show in a repr."""

    def __init__(self, tokens: Mapping[str, str] | None = None) -> None:
        self._tokens = {origin(url): token for url, token in (tokens or {}).items() if token}

    def __repr__(self) -> str:
        return f"OriginTokens({sorted(self._tokens)})"

    def __bool__(self) -> bool:
        return bool(self._tokens)

    def token_for(self, url: str) -> str | None:
        """The token of url's origin, or None."""
        return self._tokens.get(origin(url))

    def headers_for(self, url: str) -> dict[str, str]:
        """The Authorization header a request to url carries: only its own origin's token."""
        return bearer(self.token_for(url))


def bearer(token: str | None) -> dict[str, str]:
    """The one Authorization header arkfs sends: `Bearer TOKEN` (none without a token)."""
    return {"Authorization": f"Bearer {token}"} if token else {}
