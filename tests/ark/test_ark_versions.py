"""Version qualifiers: `ark:NAAN/Name/@vN/...`, in every equivalent spelling."""

import pytest

from arkfs.ark import filename_to_qualifier, normalize, parse, qualifier_to_filename
from arkfs.ark.errors import FilenameError, VersionError
from arkfs.ark.version_qualifier import split_version, version_name, version_of_name, versioned

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`

ARK = "ark:12345/x6np1wh8k"


@pytest.mark.parametrize(
    "spelling",
    [
        f"{ARK}/@v2/c3/s5",
        "ark:/12345/x6np1wh8k/@v2/c3/s5",
        "ARK:12345/x6np-1wh8k/@v2//c3/s5/",
        "https://n2t.net/ark:12345/x6np1wh8k/@v2/c3/s5?info",
        "ark:12345/x6np1wh8k/@-v-2/c3/s5",
    ],
)
def test_every_equivalent_spelling_names_the_version(spelling: str) -> None:
    """Normalization and Lexical Equivalence keeps '@': it is not a reserved character."""
    inner, version = split_version(parse(spelling))
    assert version == 2
    assert str(inner) == f"{ARK}/c3/s5"
    assert normalize(spelling) == f"{ARK}/@v2/c3/s5"


def test_without_a_version_qualifier_the_latest_is_named() -> None:
    for text in (ARK, f"{ARK}/c3", f"{ARK}/c3/@v2", f"{ARK}/%40v2"):
        ark = parse(text)
        assert split_version(ark) == (ark, None)


@pytest.mark.parametrize(
    "component", ["@v0", "@v01", "@V2", "@2", "@", "@va", "@v1x", "@v" + "9" * 19]
)
def test_a_first_component_starting_with_at_must_be_a_version(component: str) -> None:
    assert version_of_name(component) is None
    with pytest.raises(VersionError, match="@v1, @v2"):
        split_version(parse(f"{ARK}/{component}/c3"))


def test_versioned_and_split_are_inverse() -> None:
    inner = parse(f"{ARK}/c3/s5.xsl")
    for version in (1, 2, 10, 123456789):
        ark = versioned(inner, version)
        assert str(ark) == f"{ARK}/@v{version}/c3/s5.xsl"
        assert split_version(parse(str(ark))) == (inner, version)
        assert version_of_name(version_name(version)) == version
    assert versioned(inner, None) is inner
    with pytest.raises(VersionError):
        version_name(0)


@pytest.mark.parametrize(
    ("name", "qualifier"), [("@v1", "%40v1"), ("@home", "%40home"), ("a@b", "a@b")]
)
def test_a_file_name_never_takes_the_place_of_a_version(name: str, qualifier: str) -> None:
    assert filename_to_qualifier(name) == qualifier
    assert qualifier_to_filename(qualifier) == name
    assert split_version(parse(f"{ARK}/{qualifier}"))[1] is None


@pytest.mark.parametrize("component", ["@v1", "@home"])
def test_a_component_starting_with_at_is_no_file_name(component: str) -> None:
    with pytest.raises(FilenameError, match="names a version"):
        qualifier_to_filename(component)
