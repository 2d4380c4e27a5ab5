"""What a resolver reply is about: the archive view of one request, and where the resolver is."""

from dataclasses import dataclass

from starlette.requests import Request

from arkfs.archive.record import Archive, VersionInfo
from arkfs.ark.identifier import Ark


@dataclass(frozen=True)
class View:
    """One request's archive: the version that answers, the ARK the request addresses it by
    (`ark:NAAN/Name`, or with `@vN`), and the versions when they were read."""

    archive: Archive
    root: Ark
    versions: list[VersionInfo]


@dataclass(frozen=True)
class Site:
    """Where the resolver is: its service path ('/...'), and its absolute base URL."""

    service: str  # ends in '/'
    base: str  # absolute, ends in '/'

    @classmethod
    def of(cls, request: Request) -> "Site":
        """Where request found the resolver."""
        return cls(request.scope.get("root_path", "") + "/", str(request.base_url))

    def href(self, ark: Ark, query: str = "") -> str:
        """The path that resolves ark here."""
        return self.service + str(ark) + query

    def url(self, ark: Ark) -> str:
        """The absolute URL that resolves ark here."""
        return self.base + str(ark)
