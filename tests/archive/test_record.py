"""The version record and the changes between two versions."""

import pytest

from arkfs.archive.changes import Changes, changes
from arkfs.archive.manifest import Entry, Kind, Manifest, build
from arkfs.archive.record import VersionInfo
from arkfs.ark.errors import VersionError

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`

ARK = "ark:12345/x6np1wh8k"
V2 = VersionInfo(ARK, 2, 1_700_000_000.25, "fixed\na typo", 1, 3, 1536)


def test_version_json_round_trip() -> None:
    assert V2.to_json() == {
        "version": 2,
        "created": 1_700_000_000.25,
        "message": "fixed\na typo",
        "follows": 1,
        "files": 3,
        "bytes": 1536,
    }
    assert VersionInfo.from_json(ARK, V2.to_json()) == V2
    first = VersionInfo(ARK, 1, 5.0, "", None, 0, 0)
    assert VersionInfo.from_json(ARK, first.to_json()) == first


@pytest.mark.parametrize(
    "change",
    [
        {"version": 0},
        {"version": True},
        {"created": "yesterday"},
        {"created": float("nan")},
        {"message": None},
        {"follows": 0},
        {"files": -1},
        {"bytes": 1.5},
    ],
)
def test_malformed_version_json_is_refused(change: dict[str, object]) -> None:
    with pytest.raises(VersionError, match=ARK):
        VersionInfo.from_json(ARK, V2.to_json() | change)
    with pytest.raises(VersionError):
        VersionInfo.from_json(ARK, [V2.to_json()])


def test_summary_is_one_line() -> None:
    assert V2.summary() == "v2  2023-11-14T22:13:20Z  3 files  1.5 KiB  fixed a typo"
    assert VersionInfo(ARK, 1, 0.0, "", None, 0, 0).summary() == (
        "v1  1970-01-01T00:00:00Z  0 files  0 B"
    )
    assert VersionInfo(ARK, 3, 0.0, " ", 2, 1, 1).summary() == (
        "v3  1970-01-01T00:00:00Z  1 file  1 B"
    )


def _manifest(files: dict[str, bytes]) -> Manifest:
    entries = [
        Entry("d", Kind.DIR, 0, 0o755, 0),
        Entry("link", Kind.SYMLINK, 1, 0o777, 0, target="d"),
    ]
    entries += [Entry(p, Kind.FILE, 1, 0o644, 0, h) for p, h in files.items()]
    return build(ARK, entries, 1.0)


def test_changes_compare_files_by_xet_hash() -> None:
    a, b, c = bytes(32), bytes(range(32)), bytes(range(1, 33))
    old = _manifest({"d/same": a, "d/edited": a, "gone": b})
    new = _manifest({"d/same": a, "d/edited": b, "new": c, "d/new2": c})
    assert changes(old, new) == Changes(
        added=("d/new2", "new"), removed=("gone",), changed=("d/edited",)
    )
    assert changes(None, old) == Changes(added=("d/edited", "d/same", "gone"))
    assert changes(new, new) == Changes()
