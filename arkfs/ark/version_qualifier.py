"""Version qualifiers: `ark:NAAN/Name/@vN/...` names version N of an archive.

Every bind of an archive's ARK makes a new immutable version. An ARK names the latest
version; one whose first component is `@v` and a version number (1, 2, ..., no leading
zero) names that version, and the components after it a path inside it. This is a
qualifier the NMA assigns (The Qualifier Part). `@` is in the repertoire and carries no
reserved meaning (Character Repertoires), so normalization leaves it alone and every
equivalent spelling (`ark:/NAAN/Name/@v2`, hyphens, NAAN case) names the same version.

A first component that starts with `@` and is not a version is refused, never taken as
a file name: a file name that starts with `@` is escaped (`%40`, arkfs.ark.filenames),
so it never stands where a version does.
"""

import re
from dataclasses import replace

from arkfs.ark.errors import VersionError
from arkfs.ark.identifier import Ark

MARK = "@"
_VERSION = re.compile(r"@v([1-9][0-9]{0,17})")  # up to 18 digits: fits every store's integer


def version_name(version: int) -> str:
    """The qualifier component of a version, e.g. `@v2`; also its name in the mount."""
    if version < 1:
        raise VersionError(f"version {version} does not exist: versions count from 1")
    return f"{MARK}v{version}"


def version_of_name(name: str) -> int | None:
    """The version a component or file name spells (`@v2` is 2), or None if it spells none."""
    match = _VERSION.fullmatch(name)
    return int(match[1]) if match else None


def split_version(ark: Ark) -> tuple[Ark, int | None]:
    """ark without its version qualifier, and the version it names (None: the latest).

    VersionError if its first component starts with `@` without being a version.
    """
    if not ark.components or not ark.components[0].startswith(MARK):
        return ark, None
    version = version_of_name(ark.components[0])
    if version is None:
        raise VersionError(
            f"{ark}: {ark.components[0]!r} is no version; name one as @v1, @v2, ... "
            "(a file name starting with '@' is spelled %40)"
        )
    return replace(ark, components=ark.components[1:]), version


def versioned(ark: Ark, version: int | None) -> Ark:
    """ark (without a version qualifier) naming version: `@vN` first; as it is for None."""
    if version is None:
        return ark
    return replace(ark, components=(version_name(version), *ark.components))
