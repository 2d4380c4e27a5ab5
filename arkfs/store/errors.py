"""Errors of the store: each message says what is wrong and what to do about it."""


class StoreError(Exception):
    """Base class of every store error."""


class NotFound(StoreError, LookupError):
    """The store holds nothing under that name (xorb, file, binding, or the store itself)."""


class Rejected(StoreError, ValueError):
    """Input that is inconsistent with itself or with the store; the store is left unchanged."""


class OutOfRange(Rejected):
    """A byte range that does not lie within the object it is asked of."""


class StoreCorrupt(StoreError):
    """Stored data that is damaged: it no longer matches its name or its index rows."""
