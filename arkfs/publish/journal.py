"""What a publish has had acknowledged, kept on disk so an interrupted publish resumes.

One record per xorb the CAS accepted: its serialized size and its footer (which names every
chunk in it), appended and fsynced once acknowledged. A rerun of the same publish learns
those chunks first and so uploads only what was never acknowledged. A record cut short by
a crash is ignored. The journal is removed once the version is bound.
"""

import os
import struct
from pathlib import Path

from arkfs.xet.errors import XetError
from arkfs.xet.xorb import XorbFooter, parse_footer

_HEAD = struct.Struct("<QI")  # serialized xorb size, footer length


class UploadJournal:
    """The acknowledged xorbs of one publish (its target and tree), in one file."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> list[tuple[XorbFooter, int]]:
        """Every whole, valid record: (footer, serialized size); none if there is no file."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        out, at = [], 0
        while at + _HEAD.size <= len(data):
            size, length = _HEAD.unpack_from(data, at)
            footer_bytes = data[at + _HEAD.size : at + _HEAD.size + length]
            if len(footer_bytes) < length:
                break  # cut short by a crash
            try:
                footer = parse_footer(footer_bytes, size)
                footer.verify()
            except XetError:
                break
            out.append((footer, size))
            at += _HEAD.size + length
        return out

    def record(self, footer: XorbFooter, size: int) -> None:
        """Append an acknowledged xorb, durably."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        packed = footer.pack()
        with open(self.path, "ab") as f:
            f.write(_HEAD.pack(size, len(packed)) + packed)
            f.flush()
            os.fsync(f.fileno())

    def remove(self) -> None:
        """Forget the journal: the publish it tracked is done."""
        self.path.unlink(missing_ok=True)
