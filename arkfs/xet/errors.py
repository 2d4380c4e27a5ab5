"""Errors raised when XET data is malformed or does not match its hashes."""


class XetError(Exception):
    """Base class of every XET error."""


class XetFormatError(XetError):
    """Bytes that do not follow the XET format; the message names field, offset and value."""

    def __init__(self, what: str, field: str, offset: int, value: object) -> None:
        self.what, self.field, self.offset, self.value = what, field, offset, value
        super().__init__(f"{what}: bad {field} at offset {offset}: {value!r}")


class XorbFormatError(XetFormatError):
    """A serialized xorb (chunk headers, footer) breaks a rule of the spec."""


class ShardFormatError(XetFormatError):
    """A serialized shard breaks a rule of the spec."""


class ShardMismatchError(XetError):
    """A shard entry that disagrees with the xorb it describes; the message names the field."""


class HashStringError(XetError, ValueError):
    """A string that is not a 64-digit XET hash."""


class HashMismatchError(XetError):
    """Content whose hash is not the one it is stored or named under."""

    def __init__(self, what: str, expected: str, actual: str) -> None:
        self.what, self.expected, self.actual = what, expected, actual
        super().__init__(f"{what}: hash mismatch, expected {expected}, got {actual}")


class CompressionError(XetError):
    """A chunk that does not decompress to its declared size."""


class ReconstructionError(XetError):
    """A reconstruction (terms, fetch info) that is inconsistent or does not cover a range."""
