"""The errors of the data path: a read that cannot give verified bytes, and why.

The FUSE handlers map ReadError (and its kinds) to EIO, and StaleObject to the object's
fresh lookup, in one place (arkfs.mount.fuse.operations).
"""


class ReadError(Exception):
    """Bytes of a file could not be read and verified; the message says why, in one line."""


class Expired(ReadError):
    """The backend refused a URL or token (Unauthorized): a new reconstruction may help."""


class BadBytes(ReadError):
    """The backend's reply was malformed or failed a check (BadReply): fetching it once
    more may help, as a bit flipped in transit or a cut-short body would."""


class Unverified(BadBytes):
    """A reconstruction (with the footers it named) that fails the trust chain."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason  # what failed, without the file and backend names


class StaleObject(ReadError):
    """The object changed at its responder: this open file cannot go on, and the next
    open should look it up again."""


class BadMapFile(Exception):
    """A stored file map that is damaged, or does not give its file hash and size."""
