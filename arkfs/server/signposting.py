"""FAIR Signposting of resolver replies: typed links to the citable ARK, its metadata, its
files and its archive, as `Link` headers (RFC 8288) and as a linkset (RFC 9264).

An archive (or directory) names its files with `item`; a file names its archive with
`collection`. Headers carry at most MAX_HEADER_ITEMS items; `?linkset` carries them all.
"""

import mimetypes
from dataclasses import dataclass
from typing import Any

from arkfs.archive.manifest import Entry, Kind, entry_ark
from arkfs.server.view import Site, View

LINKSET = "application/linkset+json"
MAX_HEADER_ITEMS = 50
DATASET = "https://schema.org/Dataset"
ABOUT_PAGE = "https://schema.org/AboutPage"


@dataclass(frozen=True)
class Link:
    """One typed link: target URL, relation, and the target's media type if known."""

    href: str
    rel: str
    type: str | None = None


def links(site: Site, view: View, entry: Entry | None, items: int | None = None) -> list[Link]:
    """Every signpost of the archive root (entry None), a directory or a file; at most
    items `item` links when given (a header shows MAX_HEADER_ITEMS: making 1,000,000 of
    them for a manifest GET took longer than a mount waits)."""
    path = entry.path if entry else ""
    here = site.url(entry_ark(view.root, path))
    out = [
        Link(here, "cite-as"),
        Link(here + "?info&format=json", "describedby", "application/json"),
        Link(here + "?linkset", "linkset", LINKSET),
    ]
    if entry is not None and entry.kind is Kind.FILE:
        return [*out, Link(site.url(view.root), "collection", "text/html")]
    out += [Link(DATASET, "type"), Link(ABOUT_PAGE, "type")]
    entries, found = view.archive.manifest.entries, 0
    for i in entries.under(path):
        if found == items:
            break
        e = entries[i]
        if e.kind is Kind.FILE:
            media = mimetypes.guess_type(e.name)[0] or "application/octet-stream"
            out.append(Link(site.url(entry_ark(view.root, e.path)), "item", media))
            found += 1
    return out


def link_header(signposts: list[Link]) -> str:
    """The Link header value of signposts, items cut at MAX_HEADER_ITEMS."""
    items = [s for s in signposts if s.rel == "item"][:MAX_HEADER_ITEMS]
    shown = [s for s in signposts if s.rel != "item"] + items
    return ", ".join(
        f'<{s.href}>; rel="{s.rel}"' + (f'; type="{s.type}"' if s.type else "") for s in shown
    )


def linkset(anchor: str, signposts: list[Link]) -> dict[str, Any]:
    """The RFC 9264 JSON linkset: one context, its links grouped by relation."""
    context: dict[str, Any] = {"anchor": anchor}
    for s in signposts:
        target = {"href": s.href} | ({"type": s.type} if s.type else {})
        context.setdefault(s.rel, []).append(target)
    return {"linkset": [context]}
