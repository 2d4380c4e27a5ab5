"""Previews on a file's landing page: the first PREVIEW_BYTES of a text file, the first
CSV_ROWS rows of a CSV file as a table, an image shown by its own URL. The bytes come from
the verified read path (read_file), so damage fails the page instead of showing a guess."""

import csv
import html
import io
import mimetypes

from arkfs.archive.manifest import Entry
from arkfs.service.archive_service import ArchiveService
from arkfs.store.files import read_file
from arkfs.util.sizes import human

PREVIEW_BYTES = 64 * 1024
CSV_ROWS = 20
TEXT, CSV, IMAGE = "text", "csv", "image"
_IMAGES = ("image/png", "image/jpeg", "image/gif", "image/webp", "image/svg+xml")


def kind(entry: Entry) -> str | None:
    """How entry is previewed (TEXT, CSV or IMAGE), by its name; None: not at all."""
    media = mimetypes.guess_type(entry.name)[0] or ""
    if media == "text/csv":
        return CSV
    if media.startswith("text/") or media in ("application/json", "application/xml"):
        return TEXT
    return IMAGE if media in _IMAGES else None


def head(service: ArchiveService, entry: Entry) -> bytes:
    """The first PREVIEW_BYTES of a file, chunk-verified; blocking (a worker thread)."""
    end = min(entry.size, PREVIEW_BYTES)
    if end == 0 or entry.xet_hash is None:
        return b""
    record = service.bound_file(entry.xet_hash)
    return b"".join(read_file(service.store, record, 0, end))


def preview_html(entry: Entry, href: str, data: bytes) -> str:
    """The preview section of entry (whose bytes are at href; data: its head)."""
    shown = kind(entry)
    if shown is None:
        return ""
    cut = entry.size > len(data)
    note = f"<p>The first {human(len(data))} of {human(entry.size)}.</p>" if cut else ""
    if shown == IMAGE:
        alt = html.escape(entry.name)
        body = f'<img id="preview-image" src="{html.escape(href)}" alt="{alt}">'
        note = ""
    elif shown == CSV:
        text = data.decode("utf-8", "replace")
        if cut:
            text = text.rpartition("\n")[0]  # the last row may be cut in two
        rows = list(csv.reader(io.StringIO(text)))[:CSV_ROWS]
        cells = "".join(
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows
        )
        body = f'<div class="wide"><table id="preview-table">{cells}</table></div>'
        note = f"<p>The first {len(rows)} rows.</p>" if len(rows) == CSV_ROWS or cut else ""
    else:
        text = data.decode("utf-8", "replace")
        body = f'<pre id="preview-text">{html.escape(text)}</pre>'
    return f'<section id="preview"><h2>Preview</h2>{note}{body}</section>'
