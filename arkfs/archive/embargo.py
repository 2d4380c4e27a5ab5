"""Embargo: a version whose content only read tokens may get until a date.

`arkfs publish --embargo-until DATE` adds `embargo-until: DATE` (YYYY-MM-DD, UTC) to the
ERC record's `erc-support:` segment; later versions keep it (publish starts from the
latest record) until a publish gives another date. Until that day begins, the server
serves the archive's content (files, directories, manifests, tars, the records of its
parts) only to a read token, even with --open-read; the archive's own `?info` record and
its landing page (the record, without its files) stay public.
"""

from dataclasses import replace
from datetime import UTC, date, datetime

from arkfs.ark.erc import Erc, Segment

EMBARGO = "embargo-until"


def parse_date(text: str) -> date:
    """A YYYY-MM-DD date; ValueError with a message that says so."""
    try:
        return date.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not a date: give YYYY-MM-DD, e.g. 2027-01-31") from None


def with_embargo(erc: Erc, until: date) -> Erc:
    """erc whose support segment says the content is embargoed until `until`."""
    support = erc.support or Segment()
    kept = [(label, v) for label, v in support.other if label != EMBARGO]
    return replace(erc, support=replace(support, other=[*kept, (EMBARGO, until.isoformat())]))


def embargoed_until(erc: Erc, now: float) -> date | None:
    """The day the embargo erc states ends, if it has not yet (at now, Unix time, UTC)."""
    if erc.support is None:
        return None
    found = dict(erc.support.other).get(EMBARGO)
    if found is None:
        return None
    try:
        until = parse_date(found)
    except ValueError:  # a record not written by arkfs: err on the side of the embargo
        return date.max
    return until if datetime.fromtimestamp(now, UTC).date() < until else None
