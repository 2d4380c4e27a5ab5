"""Where requests the network asks for may go: never to a loopback, link-local, private or
otherwise non-public address unless the config allows it (`allow_private`).

The rule is for URLs the network tells arkfs to ask (registry targets, redirect Locations):
a hostile registry or resolver could otherwise point the mount at a service on the
mount's own host or network, and serve that service's replies as a file readable by every
local user. Servers the user configured (--server, [naans], --registry, --fallback) are
trusted as given: their origins pass.

Hostnames: the name is resolved and every address it resolves to must be public, so a
name with one private address among public ones is refused too. The check is made when
the URL is checked, not at connect time: the HTTP client resolves the name again, so a
name whose records change in between (DNS rebinding with a zero TTL) could still reach a
private address. Pinning the checked address into the connection would close that; it is
not done, since the client's resolver and the system's share caches in practice and the
connect-time gap is milliseconds.
"""

import ipaddress
import socket
from collections.abc import Iterable

import httpx
import trio

from arkfs.backend.base import BackendError, Unreachable
from arkfs.net.client import origin

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")  # RFC 6052: an IPv4 address inside


class PrivateDestination(BackendError):
    """A URL the network gave leads to a non-public address, and allow_private is off."""


def is_public(address: Address) -> bool:
    """Whether address is globally routable unicast, once IPv4 inside IPv6 (mapped, 6to4,
    NAT64) is taken out: loopback, link-local, RFC 1918, ULA fc00::/7, CGNAT 100.64/10,
    0.0.0.0, documentation and multicast addresses are not."""
    if isinstance(address, ipaddress.IPv6Address):
        inner = address.ipv4_mapped or address.sixtofour
        if inner is None and address in _NAT64:
            inner = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if inner is not None:
            return is_public(inner)
    return address.is_global and not address.is_multicast


class Destinations:
    """The rule for one resolver: allow_private, and the origins trusted as given."""

    def __init__(self, allow_private: bool, trusted: Iterable[str] = ()) -> None:
        self.allow_private = allow_private
        self._trusted = {origin(url) for url in trusted}

    async def check(self, url: str, what: str) -> None:
        """Raise PrivateDestination if url (which what names, e.g. "a redirect") leads to a
        non-public address; Unreachable if its host name does not resolve."""
        if self.allow_private or origin(url) in self._trusted:
            return
        parsed = httpx.URL(url)
        host = parsed.host
        try:
            addresses = [ipaddress.ip_address(host)]
        except ValueError:
            addresses = await _resolve(
                host, parsed.port or (443 if parsed.scheme == "https" else 80)
            )
        for address in addresses:
            if not is_public(address):
                raise PrivateDestination(
                    f"{what} leads to {origin(url)}, a non-public address ({address}): refused; "
                    "set allow_private = true in the config (or --allow-private) to allow it"
                )


async def _resolve(host: str, port: int) -> list[Address]:
    """Every address host resolves to. Raises Unreachable if it resolves to none."""
    try:
        infos = await trio.socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise Unreachable(f"cannot resolve the host name {host!r}: {exc.strerror or exc}") from None
    found: list[Address] = []
    for _family, _type, _proto, _name, sockaddr in infos:
        found.append(ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0]))
    if not found:
        raise Unreachable(f"the host name {host!r} resolves to no address")
    return found
