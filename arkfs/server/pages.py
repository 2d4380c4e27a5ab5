"""The HTML landing pages of the resolver: archive root, directory and file.

Server-rendered, no JavaScript, readable on a phone. Every value is HTML-escaped here;
the JSON-LD is escaped so that it cannot end its script element.
"""

import html
import json
import mimetypes
import re
from collections.abc import Iterable
from datetime import UTC, date, datetime
from typing import Any

from arkfs.archive.manifest import Entry, Kind, entry_ark
from arkfs.archive.withdrawal import Withdrawal
from arkfs.ark.erc import Erc, Segment
from arkfs.ark.filenames import filename_text
from arkfs.ark.identifier import Ark
from arkfs.ark.metadata import (
    DESCRIPTION,
    KEYWORD,
    LICENSE,
    RELATED,
    Creator,
    creators,
    values,
)
from arkfs.ark.version_qualifier import versioned
from arkfs.export.bagit import INFLECTION as BAG_INFLECTION
from arkfs.server.citations import FORMATS
from arkfs.server.tarball import INFLECTION, MEDIA_TYPE
from arkfs.server.view import Site, View
from arkfs.util.sizes import human
from arkfs.xet.hashing import hash_to_string

# The one stylesheet of every page, served at STYLESHEET_PATH (no CDN): readable from a
# 375-pixel phone up; wide tables scroll inside their box, long names and hashes wrap.
STYLESHEET = (
    "body{font-family:system-ui,sans-serif;margin:1em auto;max-width:60em;padding:0 1em;"
    "line-height:1.45;color:#222;overflow-wrap:anywhere}"
    "h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.5em}a{color:#0645ad}"
    "table{border-collapse:collapse}td,th{padding:.2em 1em .2em 0;text-align:left;"
    "vertical-align:top}.wide{overflow-x:auto}code,.hash{word-break:break-all}"
    ".hash{font-family:monospace;font-size:.85em}dt{font-weight:bold}dd{margin:0 0 .5em 1em}"
    ".citation{border-left:3px solid #888;padding-left:.8em}"
    "nav{font-size:.9em;margin:.3em 0}nav ol{list-style:none;padding:0;margin:0}"
    "nav li{display:inline}nav li+li:before{content:' / ';color:#888}"
    "#version-switcher{background:#f4f4f4;padding:.3em .6em}"
    "pre{overflow-x:auto;background:#f8f8f8;padding:.5em}img{max-width:100%;height:auto}"
)
STYLESHEET_PATH = "arkfs.css"  # under the service path
_DIGITS = re.compile(r"(\d+)")
TAR_QUERY = "?" + INFLECTION  # download all
# A bigger archive or directory offers only its tar in JSON-LD: one DataDownload per file
# made the page of a 1,000,000-file archive 288 MB.
LISTED_DOWNLOADS = 1000


def natural_key(name: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key putting 'part2' before 'part10': digit runs compare as numbers."""
    return tuple(
        (0, int(piece)) if piece.isdigit() else (1, piece.casefold())
        for piece in _DIGITS.split(name)
    )


def size(n: int) -> str:
    """A human-readable size whose exact bytes show on hover."""
    return f'<span title="{n} bytes">{html.escape(human(n))}</span>'


def citation(erc: Erc, ark: Ark) -> str:
    """'who (when). what. ARK', the parts the record lacks left out."""
    who = erc.who or "Anonymous"
    when = f" ({erc.when})" if erc.when else ""
    what = f" {erc.what}." if erc.what else ""
    return f"{who}{when}.{what} {ark}"


def archive_page(site: Site, view: View, path: str, entry: Entry | None, erc: Erc) -> str:
    """The landing page of the archive root (entry None) or of one of its directories."""
    archive = view.archive
    here = entry_ark(view.root, path)
    files = [e for e in archive.manifest.entries if e.kind is Kind.FILE]
    if path:
        files = [e for e in files if e.path.startswith(path + "/")]
    total = sum(e.size for e in files)
    children = sorted(archive.manifest.children(path), key=lambda e: natural_key(e.name))
    rows = []
    if path:
        parent = entry_ark(view.root, path.rpartition("/")[0])
        rows.append(f'<tr><td><a href="{_e(site.href(parent))}">../</a></td></tr>')
    rows += [_row(site, view.root, e) for e in children]
    body = [
        _kernel(erc, "About"),
        _citation(site, erc, here),
        f'<p id="totals">{len(files)} file{"s" * (len(files) != 1)}, {size(total)} in all. '
        f'<a id="download-all" href="{_e(site.href(here, TAR_QUERY))}">Download all</a> '
        "(one tar, every chunk verified)</p>",
        '<h2>Contents</h2><div class="wide"><table id="files">',
        "<tr><th>name</th><th>size</th><th>modified (UTC)</th><th>checksums</th></tr>",
        *rows,
        "</table></div>",
    ]
    if erc.support is not None:
        body.append(_kernel(erc.support, "Persistence statement", "persistence"))
    if entry is None:
        body.insert(2, _cite_formats(site, here))
        bag = _e(site.href(here, "?" + BAG_INFLECTION))
        body.insert(4, f'<p>For preservation: <a id="bag" href="{bag}">BagIt bag</a> (tar)</p>')
        body.append(_versions(site, view))
    ld = _json_ld(site, view, here, erc, files)
    return _document(site, erc.what or str(here), here, view, path, body, ld)


def file_page(site: Site, view: View, entry: Entry, erc: Erc, preview: str = "") -> str:
    """The landing page of one file: its record, citation, size, checksums and preview
    (preview.py's HTML)."""
    here = entry_ark(view.root, entry.path)
    body = [
        _kernel(erc, "About"),
        _citation(site, erc, here),
        "<h2>File</h2><dl>",
        f"<dt>Size</dt><dd>{size(entry.size)}</dd>",
        *_checksum_items(entry),
        f'<dt>Download</dt><dd><a id="download" href="{_e(site.href(here))}">'
        f"{_e(entry.name)}</a></dd></dl>",
        preview,
    ]
    if erc.support is not None:
        body.append(_kernel(erc.support, "Persistence statement", "persistence"))
    return _document(site, erc.what or str(here), here, view, entry.path, body, None)


def _e(text: object) -> str:
    """text as HTML, a byte of a file name that is not UTF-8 as its %XX."""
    return html.escape(filename_text(str(text)))


def _kernel(segment: Segment, heading: str, ident: str = "about") -> str:
    """A labelled who/what/when/where list (and any other elements) under heading."""
    items = "".join(
        f'<dt>{_e(label.capitalize())}</dt><dd class="{_e(label)}">{_e(value)}</dd>'
        for label, value in segment.elements()
    )
    return f'<section id="{ident}"><h2>{_e(heading)}</h2><dl>{items}</dl></section>'


def _citation(site: Site, erc: Erc, ark: Ark) -> str:
    url = site.url(ark)
    return (
        '<section><h2>Cite as</h2><p class="citation" id="citation">'
        f'{_e(citation(erc, ark))}</p><p>Resolvable URL: <a id="url" href="{_e(url)}">'
        f"{_e(url)}</a></p></section>"
    )


def _cite_formats(site: Site, here: Ark) -> str:
    """Links to the citation exports (citations.py) of the archive here."""
    links = " · ".join(
        f'<a class="cite-format" type="{f.media_type}" '
        f'href="{_e(site.href(here, "?format=" + f.name))}">{_e(f.label)}</a>'
        for f in FORMATS
    )
    return f'<p id="cite-formats">Export citation: {links}</p>'


def _checksum_items(entry: Entry) -> Iterable[str]:
    if entry.sha256 is not None:
        yield f'<dt>SHA-256</dt><dd class="hash sha256" id="sha256">{entry.sha256.hex()}</dd>'
    if entry.xet_hash is not None:
        xet = hash_to_string(entry.xet_hash)
        yield f'<dt>XET hash</dt><dd class="hash xet" id="xet">{xet}</dd>'


def _row(site: Site, root: Ark, e: Entry) -> str:
    ark = entry_ark(root, e.path)
    name = e.name + ("/" if e.kind is Kind.DIR else "")
    if e.kind is Kind.SYMLINK:
        name += f" -> {e.target}"
    when = datetime.fromtimestamp(e.mtime_ns / 1e9, UTC).strftime("%Y-%m-%d %H:%M")
    cells = [f'<a class="entry" href="{_e(site.href(ark))}">{_e(name)}</a>']
    cells.append(size(e.size) if e.kind is Kind.FILE else "")
    cells.append(when)
    record = site.href(ark, "?info")
    sums = []  # each checksum links to itself on the file's record page
    if e.sha256 is not None:
        sums.append(
            f'SHA-256 <a class="hash sha256" href="{_e(record)}#sha256">{e.sha256.hex()}</a>'
        )
    if e.xet_hash is not None:
        xet = hash_to_string(e.xet_hash)
        sums.append(f'XET <a class="hash xet" href="{_e(record)}#xet">{xet}</a>')
    info = f'<a class="info" href="{_e(record)}">record</a>'
    cells.append("<br>".join([*sums, info]))
    return "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


def _versions(site: Site, view: View) -> str:
    if not view.versions:
        return ""
    shown = view.archive.version.version
    latest = f'<a href="{_e(site.href(view.archive.ark))}">latest</a>'
    rows = []
    for v in reversed(view.versions):
        ark = versioned(view.archive.ark, v.version)
        name = f'<a href="{_e(site.href(ark))}">{v.name}</a>' + " (shown)" * (v.version == shown)
        when = datetime.fromtimestamp(v.created, UTC).strftime("%Y-%m-%d %H:%M:%S")
        cells = [name, when, str(v.files), size(v.bytes), _e(v.message)]
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return (
        f'<section id="versions"><h2>Versions</h2><p>{latest} is always the newest; each '
        'version stays as it was bound.</p><div class="wide"><table>'
        "<tr><th>version</th><th>bound (UTC)</th><th>files</th><th>size</th><th>message</th>"
        "</tr>" + "".join(rows) + "</table></div></section>"
    )


# DataCite relation types that say what the dataset was made from (schema.org isBasedOn),
# and those that point at works it cites or is described in (schema.org citation).
BASED_ON = ("IsDerivedFrom", "IsNewVersionOf", "IsVersionOf", "IsVariantFormOf", "Continues")
CITED = ("Cites", "References", "IsSupplementTo", "IsDescribedBy", "IsDocumentedBy")


def rich_json_ld(erc: Erc) -> dict[str, Any]:
    """schema.org properties from the record's rich elements (arkfs.ark.metadata) and its
    rights: and subject: elements: license, description, keywords, creator (with ORCID
    identifier and affiliation, replacing the one made of who), isBasedOn and citation."""
    ld: dict[str, Any] = {}
    licence = values(erc, LICENSE) or values(erc, "rights")
    if licence:
        spdx = values(erc, LICENSE)
        ld["license"] = f"https://spdx.org/licenses/{spdx[0]}" if _single_id(spdx) else licence[0]
    if values(erc, DESCRIPTION):
        ld["description"] = values(erc, DESCRIPTION)[0]
    keywords = values(erc, KEYWORD) + values(erc, "subject")
    if keywords:
        ld["keywords"] = keywords
    if creators(erc):
        ld["creator"] = [_person(c) for c in creators(erc)]
    related = [r.partition("=") for r in values(erc, RELATED)]
    for key, kinds in (("isBasedOn", BASED_ON), ("citation", CITED)):
        found = [identifier for relation, _, identifier in related if relation in kinds]
        if found:
            ld[key] = found
    return ld


def _single_id(spdx: list[str]) -> bool:
    """Is the licence one SPDX identifier (which has a page), not an expression?"""
    return bool(spdx) and all(c.isalnum() or c in "-." for c in spdx[0])


def _person(c: Creator) -> dict[str, Any]:
    person: dict[str, Any] = {"@type": "Person", "name": c.name}
    if c.orcid:
        person["identifier"] = f"https://orcid.org/{c.orcid}"
    if c.affiliation:
        person["affiliation"] = {"@type": "Organization", "name": c.affiliation}
    return person


def _breadcrumbs(site: Site, root: Ark, path: str) -> str:
    """Where a page is: the resolver's home, the archive (or version), each directory above
    path, and path itself (not a link)."""
    crumbs = [f'<a href="{_e(site.service)}">home</a>']
    names = path.split("/") if path else []
    for i in range(len(names)):
        ark = entry_ark(root, "/".join(names[:i]))
        label = str(root) if i == 0 else names[i - 1]
        crumbs.append(f'<a href="{_e(site.href(ark))}">{_e(label)}</a>')
    crumbs.append(f'<span aria-current="page">{_e(names[-1] if names else str(root))}</span>')
    items = "".join(f"<li>{c}</li>" for c in crumbs)
    return f'<nav id="breadcrumbs" aria-label="breadcrumbs"><ol>{items}</ol></nav>'


def _switcher(site: Site, view: View) -> str:
    """The version switcher: the version shown, and a link to every other (or, where the
    list was not read, to the latest)."""
    archive = view.archive.ark
    shown = view.archive.version.version
    links = [f'<a href="{_e(site.href(archive))}">latest</a>']
    for v in reversed(view.versions):
        ark = versioned(archive, v.version)
        if v.version == shown:
            links.append(f"<strong>{v.name}</strong>")
        else:
            links.append(f'<a href="{_e(site.href(ark))}">{v.name}</a>')
    if not view.versions:
        links.append(f"<strong>v{shown}</strong>")
    return f'<nav id="version-switcher">Version: {" · ".join(links)}</nav>'


def _json_ld(site: Site, view: View, here: Ark, erc: Erc, files: list[Entry]) -> dict[str, Any]:
    """schema.org Dataset of the archive or directory here: a DataDownload per file (up to
    LISTED_DOWNLOADS of them), and one for the whole as a tar."""
    url = site.url(here)
    downloads = []
    listed = files if len(files) <= LISTED_DOWNLOADS else []
    for f in sorted(listed, key=lambda e: natural_key(e.path)):
        item: dict[str, Any] = {
            "@type": "DataDownload",
            "name": filename_text(f.path),
            "contentUrl": site.url(entry_ark(view.root, f.path)),
            "contentSize": f"{f.size} B",
            "encodingFormat": mimetypes.guess_type(f.name)[0] or "application/octet-stream",
        }
        if f.sha256 is not None:
            item["sha256"] = f.sha256.hex()
        downloads.append(item)
    downloads.append(
        {
            "@type": "DataDownload",
            "name": "all files (tar)",
            "contentUrl": url + TAR_QUERY,
            "encodingFormat": MEDIA_TYPE,
        }
    )
    ld: dict[str, Any] = {
        "@context": "https://schema.org",
        "@type": "Dataset",
        "@id": url,
        "identifier": str(here),
        "url": url,
        "name": erc.what or str(here),
        "version": view.archive.version.name,
        "distribution": downloads,
    }
    if here != view.root:
        ld["isPartOf"] = {"@type": "Dataset", "@id": site.url(view.root)}
    if erc.who:
        ld["creator"] = [{"@type": "Person", "name": who.strip()} for who in erc.who.split(";")]
    if erc.when:
        ld["datePublished"] = erc.when
    return ld | rich_json_ld(erc)


def _document(
    site: Site,
    title: str,
    here: Ark,
    view: View,
    path: str,
    body: list[str],
    ld: dict[str, Any] | None,
) -> str:
    version = view.archive.version.version
    nav = _breadcrumbs(site, view.root, path) + "\n" + _switcher(site, view)
    script = ""
    if ld is not None:
        text = json.dumps(ld, ensure_ascii=False).replace("<", "\\u003c")
        script = f'<script type="application/ld+json">{text}</script>\n'
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_e(title)}</title>
<link rel="stylesheet" href="{_e(site.service + STYLESHEET_PATH)}">
{script}</head><body>
{nav}
<h1>{_e(title)}</h1>
<p><code id="ark">{_e(here)}</code> (<a href="{_e(site.href(here, "?info"))}">ERC record</a>),
version {version}</p>
{chr(10).join(body)}
</body></html>
"""


def home_page(site: Site, naans: list[str], prefix: str | None, arks: list[str]) -> str:
    """The resolver's home: what it serves, its discovery file, and a search over bound ARKs
    by prefix (arks: the matches, when prefix was asked for)."""
    found = ""
    if prefix is not None:
        items = "".join(
            f'<li><a class="ark" href="{_e(site.service + a)}">{_e(a)}</a></li>' for a in arks
        )
        found = (
            f'<h2>Bound ARKs starting with <code>{_e(prefix)}</code></h2><p id="count">'
            f"{len(arks)} found</p><ul>{items}</ul>"
        )
    return _plain_document(
        site,
        "ARK resolver",
        f"""<p>This is an arkfs ARK resolver (name mapping authority) for the NAAN(s)
<code id="naans">{_e(" ".join(naans) or "none yet")}</code>. Append a Compact ARK to
<code>{_e(site.base)}</code> to reach an archive: its landing page, its files, its metadata
with <code>?info</code>, its versions with <code>/@vN</code>.</p>
<p>Resolver description: <a id="well-known" href="{_e(site.service)}.well-known/ark">
.well-known/ark</a></p>
<form method="get" action="{_e(site.service)}"><label>Find bound ARKs by prefix
<input name="prefix" value="{_e(prefix or "ark:")}"></label> <button>Search</button></form>
{found}""",
    )


def gone_page(site: Site, ark: Ark, erc: Erc, withdrawal: Withdrawal) -> str:
    """410 Gone for a browser: the withdrawn archive's ERC, persistence statement and why."""
    notice = (
        f'<p id="withdrawn">{_e(ark)} was withdrawn on {_e(withdrawal.when)}: '
        f'<span class="reason">{_e(withdrawal.reason)}</span></p>'
    )
    return _record_page(site, ark, erc, f"410 Gone: {ark}", notice)


def embargo_page(site: Site, ark: Ark, erc: Erc, until: date) -> str:
    """The public landing page of an embargoed archive: its record, without its files."""
    notice = (
        f'<p id="embargoed">The content of {_e(ark)} is under embargo until '
        f"{_e(until.isoformat())}: it is served to read tokens only.</p>"
    )
    return _record_page(site, ark, erc, str(ark), notice)


def _record_page(site: Site, ark: Ark, erc: Erc, title: str, notice: str) -> str:
    """A page of notice, the ERC record and the persistence statement, and where the record is."""
    parts = [notice, _kernel(erc, "About")]
    if erc.support is not None:
        parts.append(_kernel(erc.support, "Persistence statement", "persistence"))
    parts.append(
        f'<p>Its record stays at <a href="{_e(site.href(ark, "?info"))}">'
        f"{_e(site.url(ark))}?info</a>.</p>"
    )
    return _plain_document(site, title, "\n".join(parts))


def error_page(site: Site, status: int, message: str, nearest: Ark | None = None) -> str:
    """An error for a browser: what went wrong, the nearest ARK that exists (if known), and
    what this resolver serves."""
    near = ""
    if nearest is not None:
        link = f'<a id="nearest" href="{_e(site.href(nearest))}">{_e(nearest)}</a>'
        near = f"<p>The nearest that exists: {link}</p>"
    return _plain_document(
        site,
        f"{status}: {message.split(':')[0]}",
        f"""<p id="message">{_e(message)}</p>{near}
<p>This ARK resolver serves archives as <code>{_e(site.base)}ark:NAAN/Name[/path]</code>;
see <a href="{_e(site.service)}">its home page</a> and
<a href="{_e(site.service)}.well-known/ark">.well-known/ark</a>.</p>""",
    )


def _plain_document(site: Site, title: str, body: str) -> str:
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_e(title)}</title>
<link rel="stylesheet" href="{_e(site.service + STYLESHEET_PATH)}">
</head><body>
<nav class="breadcrumbs"><a href="{_e(site.service)}">resolver home</a></nav>
<h1>{_e(title)}</h1>
{body}
</body></html>
"""
