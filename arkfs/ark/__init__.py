"""ARK identifiers (draft-kunze-ark-40): the pure bottom layer, no I/O and no other arkfs imports.

- `parse` turns any received spelling (with or without an NMA, `ark:` or `ark:/`, any
  label case, hyphens, wrapped-line whitespace, an inflection) into a normalized `Ark`;
  `normalize` gives its canonical string, the key for lookups; `equivalent` compares.
- `Ark` holds the parts (NAAN, Name, shoulder and blade, components, variants, check
  zone) and the relations '/' and '.' reveal (parent, ancestors, variant roots).
- `filename_to_qualifier` and `qualifier_to_filename` map file names to qualifier
  components and back; a file name's '.' is %-encoded, never a variant separator, and so
  is a leading '@', which starts a version qualifier.
- `split_version` and `versioned` read and write the `@vN` qualifier of an archive's
  version N (arkfs.ark.version_qualifier).
- `check_character`/`verify` are the NOID check digit algorithm; `mint` makes names.
- `Erc` is an ERC metadata record in ANVL or JSON; `info_response` is a THUMP `?info` reply.

Decisions, each explained where it is made: the NAAN is lowercased and the rest keeps
its case (normalization); variant order is significant (`Ark`); a variant before a
component moves to the end (normalization); '%' must start two hex digits, and hyphens
are removed inside an escape too ('%-2f' is '%2F', normalization).
"""

from arkfs.ark.anvl import Element, read_records, write_record
from arkfs.ark.erc import Erc, NullCode, Segment, null_code
from arkfs.ark.errors import (
    AnvlError,
    ArkError,
    ArkSyntaxError,
    CharacterError,
    ErcError,
    FilenameError,
    MintError,
    MissingLabelError,
    MissingNameError,
    NaanSyntaxError,
    PercentEscapeError,
    ShoulderError,
    VersionError,
)
from arkfs.ark.filenames import filename_to_qualifier, qualifier_to_filename
from arkfs.ark.identifier import Ark, Inflection
from arkfs.ark.minter import mint, parse_shoulder
from arkfs.ark.naan import SHARED_NAANS, SharedNaan
from arkfs.ark.ncda import check_character, verify
from arkfs.ark.normalization import equivalent, normalize, parse
from arkfs.ark.thump import info_response
from arkfs.ark.version_qualifier import split_version, versioned

__all__ = [
    "SHARED_NAANS",
    "AnvlError",
    "Ark",
    "ArkError",
    "ArkSyntaxError",
    "CharacterError",
    "Element",
    "Erc",
    "ErcError",
    "FilenameError",
    "Inflection",
    "MintError",
    "MissingLabelError",
    "MissingNameError",
    "NaanSyntaxError",
    "NullCode",
    "PercentEscapeError",
    "Segment",
    "SharedNaan",
    "ShoulderError",
    "VersionError",
    "check_character",
    "equivalent",
    "filename_to_qualifier",
    "info_response",
    "mint",
    "normalize",
    "null_code",
    "parse",
    "parse_shoulder",
    "qualifier_to_filename",
    "read_records",
    "split_version",
    "verify",
    "versioned",
    "write_record",
]
