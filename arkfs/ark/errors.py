"""Errors raised by the ARK layer; every message names the problem and how to fix it."""


class ArkError(Exception):
    """Base class of every error raised by `arkfs.ark`."""


class ArkSyntaxError(ArkError, ValueError):
    """A string, or a part of one, that is not a well-formed ARK."""


class MissingLabelError(ArkSyntaxError):
    """No `ark:` label where an ARK must have one."""


class NaanSyntaxError(ArkSyntaxError):
    """A NAAN that is missing or not betanumeric."""


class MissingNameError(ArkSyntaxError):
    """A NAAN with no Name assigned under it."""


class PercentEscapeError(ArkSyntaxError):
    """A '%' not followed by two hex digits."""


class CharacterError(ArkSyntaxError):
    """A character outside the ARK repertoire, or an empty part."""


class ShoulderError(ArkSyntaxError):
    """A shoulder that cannot be minted under (not primordinal, or qualified)."""


class MintError(ArkError):
    """The minter could not find enough unused names."""


class FilenameError(ArkError, ValueError):
    """A file name that cannot become a qualifier, or a qualifier that is not a file name."""


class AnvlError(ArkError, ValueError):
    """Text that is not a well-formed ANVL record, or a label ANVL cannot carry."""


class ErcError(ArkError, ValueError):
    """An ANVL record or JSON mapping that is not a well-formed ERC."""


class ManifestError(ArkError):
    """An archive manifest that is malformed, inconsistent or of an unknown version."""


class VersionError(ArkError, ValueError):
    """A version qualifier (`@vN`) or a version record that is malformed."""
