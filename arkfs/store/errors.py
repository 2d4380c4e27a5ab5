"""Errors of the store: each message says what is wrong and what to do about it."""

import errno


class StoreError(Exception):
    """Base class of every store error."""


class StoreFull(StoreError):
    """The store's disk (or quota) is full: what was being written was not stored."""


class NotFound(StoreError, LookupError):
    """The store holds nothing under that name (xorb, file, binding, or the store itself)."""


class Rejected(StoreError, ValueError):
    """Input that is inconsistent with itself or with the store; the store is left unchanged."""


class OutOfRange(Rejected):
    """A byte range that does not lie within the object it is asked of."""


class WrongStore(StoreError):
    """The parts of a store do not belong together (bucket, prefix, index), or are not set
    up for this arkfs: the message says what to run or to correct; nothing was changed."""


class StoreCorrupt(StoreError):
    """Stored data that is damaged: it no longer matches its name or its index rows."""


def is_full(exc: OSError) -> bool:
    """Whether an OSError means that the disk or the quota is full (StoreFull's cause)."""
    return exc.errno in (errno.ENOSPC, errno.EDQUOT)
