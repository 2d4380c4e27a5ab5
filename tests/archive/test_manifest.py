"""Archive manifests: round trips, validation, and entry ARKs."""

from array import array
from pathlib import Path

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from arkfs.archive import manifest
from arkfs.archive._tree import FAULT_ENDS, by_parent, extremes, parents
from arkfs.archive.manifest import (
    ENTRY_FIELDS,
    UNLIKE_BLOCK,
    VERSION,
    Entries,
    Entry,
    Kind,
    Manifest,
    build,
    entry_ark,
    entry_erc,
    entry_path,
)
from arkfs.ark.erc import Erc, Segment
from arkfs.ark.errors import ManifestError
from arkfs.ark.normalization import parse

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`

ARK = "ark:12345/x6np1wh8k"
H1, H2 = bytes(range(32)), bytes(range(1, 33))


def sample() -> Manifest:
    return build(
        ARK,
        [
            Entry("c3", Kind.DIR, 0, 0o755, 10),
            Entry("c3/s5.v7.xsl", Kind.FILE, 5, 0o644, 20, H1, H2),
            Entry("c3/link", Kind.SYMLINK, 9, 0o777, 30, target="s5.v7.xsl"),
            Entry("empty", Kind.FILE, 0, 0o600, 40, H2),
        ],
        123.5,
        token_url="http://x/v1/token",
    )


def test_msgpack_and_json_round_trip() -> None:
    m = sample()
    assert Manifest.from_msgpack(m.to_msgpack()) == m
    assert Manifest.from_json(m.to_json()) == m
    assert m.total_size == 5
    assert [e.name for e in m.children("c3")] == ["link", "s5.v7.xsl"]
    assert m.entry("c3/s5.v7.xsl").st_mode == 0o100644  # type: ignore[union-attr]


names = st.text(
    st.characters(exclude_categories=["Cs"], exclude_characters="/\0"), min_size=1, max_size=12
).filter(lambda n: n not in (".", ".."))


@given(st.lists(names, min_size=1, max_size=4))
def test_entry_ark_and_path_are_inverse(parts: list[str]) -> None:
    archive = parse(ARK)
    path = "/".join(parts)
    ark = entry_ark(archive, path)
    assert entry_path(archive, parse(str(ark))) == path


def test_typed_variants_fold_into_the_file_name() -> None:
    archive = parse(ARK)
    assert entry_path(archive, parse(f"{ARK}/c3/s5.v7.xsl")) == "c3/s5.v7.xsl"
    assert entry_path(archive, parse("ark:12345/other/c3")) is None


def test_entry_paths_under_a_version() -> None:
    latest, v2 = parse(ARK), parse(f"{ARK}/@v2")
    assert entry_ark(v2, "c3/s5.v7.xsl") == parse(f"{ARK}/@v2/c3/s5%2Ev7%2Exsl")
    assert entry_path(v2, parse("ark:/12345/x6np-1wh8k/@v2/c3/s5.v7.xsl")) == "c3/s5.v7.xsl"
    assert entry_path(v2, parse(f"{ARK}/@v2")) == ""
    assert entry_path(latest, parse(f"{ARK}/%40v2")) == "@v2"  # a file named '@v2'
    for outside in (f"{ARK}/c3", f"{ARK}/@v3/c3"):  # the latest, another version
        assert entry_path(v2, parse(outside)) is None, outside
    for outside in (f"{ARK}/@v2/c3", f"{ARK}/@x/c3", f"{ARK}/c3/@v2"):
        assert entry_path(latest, parse(outside)) is None, outside


def test_entry_erc_tells_the_archive_story_of_the_part() -> None:
    erc = Erc(who="Lab", what="Sines", when="2026", support=Segment(what="kept forever"))
    e = sample().entry("c3/s5.v7.xsl")
    assert e is not None
    part = entry_erc(erc, parse(ARK), e)
    assert (part.who, part.when, part.what) == ("Lab", "2026", "Sines: c3/s5.v7.xsl")
    assert part.where == f"{ARK}/c3/s5%2Ev7%2Exsl"
    assert part.support == erc.support


def _version_1(m: Manifest) -> dict[str, object]:
    """m as arkfs wrote manifests before version 2: one array per entry."""
    rows = [[getattr(e, f) for f in ENTRY_FIELDS] for e in m.entries]
    head = {"format": "arkfs-manifest", "version": 1, "ark": m.ark, "created": m.created}
    return head | {"cas_url": m.cas_url, "token_url": m.token_url, "entries": rows}


def _mutated(**changes: object) -> bytes:
    return msgpack.packb(_version_1(sample()) | changes, use_bin_type=True)


def _columns(**changes: object) -> bytes:
    obj = msgpack.unpackb(sample().to_msgpack(), raw=False, strict_map_key=False)
    return msgpack.packb(obj | changes, use_bin_type=True)


def _backward_ends() -> bytes:
    """The sample's path ends with the second before the first: the last still ends the
    paths, and the first entry's path is whole."""
    obj = msgpack.unpackb(sample().to_msgpack(), raw=False, strict_map_key=False)
    ends = array("I")
    ends.frombytes(obj["path_ends"])
    ends[1] = ends[0] - 1
    return ends.tobytes()


def test_version_1_manifests_stay_readable() -> None:
    m = sample()
    old = msgpack.packb(_version_1(m), use_bin_type=True)
    assert Manifest.from_msgpack(old) == m
    assert msgpack.unpackb(m.to_msgpack(), strict_map_key=False)["version"] == VERSION == 2


def test_columns_answer_lookups_without_making_every_entry() -> None:
    m = Manifest.from_msgpack(sample().to_msgpack())
    assert [m.entries.path(i) for i in m.entries.children("")] == ["c3", "empty"]
    assert m.entry("c3/link") == Entry("c3/link", Kind.SYMLINK, 9, 0o777, 30, target="s5.v7.xsl")
    assert m.entry("c3/nothing") is None and m.entry("c") is None
    assert m.children("empty") == [] and m.children("nowhere") == []
    assert (m.file_count, [e.path for e in m.files]) == (2, ["c3/s5.v7.xsl", "empty"])
    assert m.entries[-1].sha256 is None and m.entries[1].sha256 is None
    assert list(m.entries.file_hashes()) == [(2, H1, 5, H2), (3, H2, 0, None)]
    assert [m.entries.path(i) for i in m.entries.under("c3")] == ["c3/link", "c3/s5.v7.xsl"]
    assert (len(m.entries.under("")), len(m.entries.under("empty"))) == (4, 0)
    zeros = build(ARK, [Entry("z", Kind.FILE, 0, 0o600, 1, H1, bytes(32))], 1.0)
    assert Manifest.from_msgpack(zeros.to_msgpack()).entries[0].sha256 == bytes(32)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\xc1garbage", "not valid msgpack"),
        (msgpack.packb([1, 2]), "not an arkfs manifest"),
        (_mutated(version=VERSION + 1), "upgrade arkfs"),
        (_mutated(ark="ark:12345/x6np1wh8k/sub"), "normalized ark:NAAN/Name"),
        (_mutated(ark="not an ark"), "manifest ARK"),
        (_mutated(entries=[["a/b", "file", 1, 0o644, 0, H1, None, None]]), "parent directory"),
        (
            _mutated(
                entries=[
                    ["b", "dir", 0, 0o755, 0, None, None, None],
                    ["a", "dir", 0, 0o755, 0, None, None, None],
                ]
            ),
            "sorted",
        ),
        (_mutated(entries=[["a", "file", 1, 0o644, 0, b"short", None, None]]), "32-byte XET hash"),
        (_mutated(entries=[["a", "dir", 0, 0o755, 0, H1, None, None]]), "32-byte XET hash"),
        (_mutated(entries=[["..", "dir", 0, 0o755, 0, None, None, None]]), "file names"),
        (_mutated(entries=[["a", "fifo", 0, 0o755, 0, None, None, None]]), "unknown kind"),
        (_mutated(entries=[["a", "file", -1, 0o644, 0, H1, None, None]]), "out of range"),
        (_mutated(entries=[["a", "file", "1", 0o644, 0, H1, None, None]]), "integer"),
        (_mutated(entries=[["a", "symlink", 1, 0o777, 0, None, None, None]]), "target"),
        (_columns(count=3), "holds"),
        (_columns(kinds=b"\x00\x01\x02\x09"), "unknown kind"),
        (_columns(paths=b"c3c3/linkc3/s5.v7.xslemptyx"), "does not cut"),
        (_columns(path_ends=_backward_ends()), "its path's end does not cut"),
        (_columns(targets=[]), "target"),
        (_columns(targets=[[9, "x"]]), "target"),
        (_columns(xet_hashes=H1 * 4), "XET hash"),
        (_columns(modes=b"\xff\xff" * 4), "out of range"),
        (_columns(sha256s=H1 * 4), "SHA-256"),
        (_columns(sha256_flags=b"\x01" * 4), "SHA-256"),
    ],
)
def test_malformed_manifests_are_refused_with_a_reason(data: bytes, message: str) -> None:
    with pytest.raises(ManifestError, match=message):
        Manifest.from_msgpack(data)


def test_malformed_json_hash_is_refused() -> None:
    obj = sample().to_json()
    obj["entries"][1]["xet_hash"] = "zz"
    with pytest.raises(ManifestError, match="malformed hash"):
        Manifest.from_json(obj)


def test_a_large_manifest_round_trips_through_its_pieces() -> None:
    files = [Entry(f"d/f{i:05}", Kind.FILE, i, 0o644, i, H1, H2) for i in range(5000)]
    m = build(ARK, [Entry("d", Kind.DIR, 0, 0o755, 0), *files], 1.0)
    assert max(map(len, m.msgpack_pieces())) > 0xFFFF  # columns written as they are
    assert Manifest.from_msgpack(m.to_msgpack()) == m
    assert m.entry("d/f04999") == files[-1] and m.file_count == 5000


def test_columns_give_names_kinds_and_stat_without_an_entry() -> None:
    entries = Manifest.from_msgpack(sample().to_msgpack()).entries
    for i, entry in enumerate(entries):
        size = len(entry.target.encode()) if entry.target is not None else entry.size
        assert entries.stat(i) == (entry.st_mode, size, entry.mtime_ns)
        assert (entries.name(i), entries.file_name(i)) == (entry.name, entry.name.encode())
        assert entries.kind(i) is entry.kind
        assert entries.at_top(i) == ("/" not in entry.path)
    assert entries.stat(1)[1] == len("s5.v7.xsl")  # c3/link: its target's length


def posix_sample() -> Manifest:
    """What POSIX archivers keep: mtimes before 1970, a hard-link group, user.* attributes
    and the root directory's mode and mtime."""
    root = Entry("", Kind.DIR, 0, 0o750, -5, xattrs=(("user.root", b"r"),))
    return build(
        ARK,
        [
            Entry("a", Kind.FILE, 5, 0o644, -1_000_000_000_123, H1, link="a"),
            Entry("d", Kind.DIR, 0, 0o755, -1, xattrs=(("user.dir", b""),)),
            Entry("d/b", Kind.FILE, 5, 0o644, -1_000_000_000_123, H1, link="a"),
            Entry("d/c", Kind.FILE, 5, 0o644, 7, H1, xattrs=(("user.x", b"\xff\x00"),)),
        ],
        1.0,
        root=root,
    )


def test_mtimes_before_1970_links_attributes_and_root_round_trip() -> None:
    m = posix_sample()
    for again in (Manifest.from_msgpack(m.to_msgpack()), Manifest.from_json(m.to_json())):
        assert again == m and again.root == m.root
        e = again.entries
        assert [x.mtime_ns for x in e] == [-1_000_000_000_123, -1, -1_000_000_000_123, 7]
        assert [e.inode_position(i) for i in range(4)] == [0, 1, 0, 3]
        assert [e.link_count(i) for i in range(4)] == [2, 1, 2, 1]
        assert e.xattrs(3) == (("user.x", b"\xff\x00"),) and e.xattrs(0) == ()
        assert e.stat(2)[2] == -1_000_000_000_123
    assert m.to_json()["root"]["mtime_ns"] == -5
    assert m.to_json()["entries"][2]["link"] == "a"


def test_a_manifest_written_by_the_release_before_links_reads_as_one_without_them() -> None:
    """tests/data/manifest-v2-before-links.msgpack: sample() encoded by the code before the
    manifest kept links, attributes and the root (no 'links', 'xattrs', 'root' keys)."""
    old = (Path(__file__).parent.parent / "data" / "manifest-v2-before-links.msgpack").read_bytes()
    assert {"links", "xattrs", "root"}.isdisjoint(msgpack.unpackb(old, strict_map_key=False))
    m = Manifest.from_msgpack(old)
    assert m == sample() and m.root is None
    assert m.to_msgpack() == old  # without extras, this encoder writes what the old one did
    assert m.entries.link_count(2) == 1 and m.entries.xattrs(2) == ()


def test_the_top_is_the_root_as_published_else_a_read_only_directory_of_when_it_was_made() -> None:
    """Manifest.top: what the mount, `arkfs get` and ark:// show for an archive's root."""
    root = Entry("", Kind.DIR, 0, 0o750, -5)
    assert Manifest("ark:12345/x6", [], created=12.5, root=root).top == root
    assert Manifest("ark:12345/x6", [], created=12.5).top == Entry(
        "", Kind.DIR, 0, 0o555, 12_500_000_000
    )


def _posix(**changes: object) -> bytes:
    obj = msgpack.unpackb(posix_sample().to_msgpack(), raw=False, strict_map_key=False)
    return msgpack.packb(obj | changes, use_bin_type=True)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (_posix(links=[[0, 1]]), "only files"),
        (_posix(links=[[0, 3]]), "differs"),
        (_posix(links=[[0]]), "2\\+ positions"),
        (_posix(links=[[]]), "2\\+ positions"),
        (_posix(links=[[2, 0]]), "2\\+ positions"),
        (_posix(xattrs=[[3, [["user.x", b"1"], ["user.x", b"2"]]]]), "twice"),
        (_posix(links=[[0, 2], [2, 3]]), "twice"),
        (_posix(links=[[0, 9]]), "only files"),
        (_posix(links="x"), "lists of positions"),
        (_posix(xattrs=[[3, [["user.ark.id", b"x"]]]]), "own"),
        (_posix(xattrs=[[3, [["trusted.x", b"x"]]]]), "user"),
        (_posix(xattrs=[[9, [["user.x", b"x"]]]]), "past the entries"),
        (_posix(root=[0o755, 0, [["user.xet.hash", b""]]]), "own"),
        (_posix(root=[0o10000, 0, []]), "0o7777"),
        (_posix(root="x"), "mode, mtime_ns"),
    ],
)
def test_malformed_extras_are_refused_with_a_reason(data: bytes, message: str) -> None:
    with pytest.raises(ManifestError, match=message):
        Manifest.from_msgpack(data)


def test_files_unlike_walks_both_manifests_in_path_order() -> None:
    def entries(files: dict[str, tuple[int, bytes | None]]) -> Entries:
        made = [Entry("d", Kind.DIR, 0, 0o755, 0)]
        made += [
            Entry(f"d/{n}", Kind.FILE, size, 0o644, 0, n.encode() * 32, sha)
            for n, (size, sha) in files.items()
        ]
        return build(ARK, made, created=1.0).entries

    before = entries({"a": (1, b"s" * 32), "c": (3, b"s" * 32), "e": (5, None)})
    after = entries({"a": (1, b"s" * 32), "b": (2, None), "c": (3, None), "e": (6, None)})
    assert [after.path(i) for i, *_ in after.files_unlike(before)] == ["d/b", "d/c", "d/e"]
    assert list(before.files_unlike(before)) == []
    assert [before.path(i) for i, *_ in before.files_unlike(after)] == ["d/c", "d/e"]


def _tree(*paths: str) -> list[Entry]:
    """Entries of these paths in this order: a path ending in `/` (cut off) is a directory."""
    return [
        Entry(p[:-1], Kind.DIR, 0, 0o755, 0)
        if p.endswith("/")
        else Entry(p, Kind.FILE, 1, 0o644, 0, H1)
        for p in paths
    ]


@pytest.mark.parametrize(
    ("paths", "message"),
    [
        (("a", "b", "c", "e", "d"), "'d': entries must be sorted"),
        (("a", "b", "b"), "'b': entries must be sorted"),
        (("a", "b/", "b"), "'b': entries must be sorted"),
        (("a/", "a//"), "'a/': not a relative path"),
        (("a", "b", "c/", "c/.."), "'c/..': not a relative path"),
        (("a", "b", "c/", "c/."), "'c/.': not a relative path"),
        (("+", "-", ".", "a"), "'.': not a relative path"),
        (("", "a"), "'': not a relative path"),
        (("a", "b", "c/x"), "'c/x': its parent directory is not listed"),
        (("a", "a/x"), "'a/x': its parent directory is not listed"),
        (("a/", "a/b/", "a/b/c", "a/d/e"), "'a/d/e': its parent directory is not listed"),
        # the parent of a run of entries is looked up once: one after the run is not its
        (("a/", "a/x", "a/y", "ab/", "ab/x", "ac/x"), "'ac/x': its parent directory"),
        (("a/", "a/b/", "a/b/x", "a/c/x"), "'a/c/x': its parent directory"),
    ],
)
def test_tree_faults_name_the_first_entry_at_fault(paths: tuple[str, ...], message: str) -> None:
    with pytest.raises(ManifestError, match=message):
        Entries.of(_tree(*paths))


def test_the_tree_check_finds_each_parent_across_runs() -> None:
    """Parents are looked up once per run of entries that share one: runs that end, come
    back and nest give the same children, siblings and tops as the paths say."""
    paths = ("a/", "a/b/", "a/b/c", "a/d", "e", "f/", "f/g/", "f/g/h", "f/i", "f/j/", "f/k")
    entries = Entries.of(_tree(*paths))
    for directory, names in {
        "": ["a", "e", "f"],
        "a": ["b", "d"],
        "a/b": ["c"],
        "f": ["g", "i", "j", "k"],
        "f/g": ["h"],
        "f/j": [],
    }.items():
        assert [entries.name(i) for i in entries.children(directory)] == names
        for i in entries.children(directory):  # the same listing, seen from each entry
            assert list(entries.siblings(i)) == list(entries.children(directory))
    assert [entries.at_top(i) for i in range(len(paths))] == [
        "/" not in p.rstrip("/") for p in paths
    ]


@given(st.lists(st.integers(min_value=-1, max_value=40), max_size=40))
def test_positions_by_parent_are_a_stable_sort_by_parent(drawn: list[int]) -> None:
    """The C counting sort orders positions as sorted() by parent does, ties by position;
    a parent outside the entries is refused, not followed."""
    count = len(drawn)
    found = [min(p, count - 1) for p in drawn]
    order = array("i")
    order.frombytes(by_parent(array("i", found)))
    assert list(order) == sorted(range(count), key=found.__getitem__)
    with pytest.raises(ValueError, match="parent"):
        by_parent(array("i", [*found, count + 1]))


@given(
    st.sampled_from("BHIiq").flatmap(
        lambda code: st.tuples(
            st.just(code),
            st.lists(
                st.integers(
                    min_value=-(2 ** (8 * array(code).itemsize - 1)) if code.islower() else 0,
                    max_value=2 ** (8 * array(code).itemsize - (code.islower())) - 1,
                ),
                max_size=30,
            ),
        )
    )
)
def test_extremes_of_a_column_are_its_min_and_max(drawn: tuple[str, list[int]]) -> None:
    code, values = drawn
    assert extremes(array(code, values)) == ((min(values), max(values)) if values else None)


def test_extremes_of_a_column_of_another_type_is_refused() -> None:
    with pytest.raises(TypeError, match="'d'"):
        extremes(array("d", [1.0]))  # type: ignore[arg-type]


def test_a_listings_columns_are_the_entries_at_its_positions() -> None:
    """child_names and stats (one pass each in C) give, for any positions in any order,
    what name() and stat() give entry by entry; a position outside the entries is
    refused, never read."""
    made = [
        Entry("a", Kind.DIR, 0, 0o755, 1),
        Entry("a/b", Kind.DIR, 0, 0o700, -2),
        Entry("a/b/c", Kind.FILE, 2**40, 0o644, 3 * 10**18, H1),
        Entry("a/d", Kind.SYMLINK, 0, 0o777, 4, target="b/c"),
        Entry("e", Kind.FILE, 0, 0o600, 5, H2),
        Entry("f", Kind.DIR, 0, 0o555, 6),
        Entry("f/g", Kind.FILE, 7, 0o444, 7, H1),
        Entry("f/h\u00e9", Kind.SYMLINK, 0, 0o777, 8, target="g\u00e9"),
    ]
    entries = Entries.of(made)
    paths = [e.path for e in made]
    for directory, positions in {"": [0, 4, 5], "a": [1, 3], "f": [7, 6], "a/b": []}.items():
        assert entries.child_names(directory, positions) == [
            entries.name(i).encode() for i in positions
        ]
        modes, sizes, mtimes, dirs = entries.stats(array("i", positions))
        assert list(zip(modes, sizes, mtimes, strict=True)) == [entries.stat(i) for i in positions]
        assert dirs == [k for k, i in enumerate(positions) if entries.is_dir(i)]
    for outside in (-1, len(paths)):
        with pytest.raises(ValueError, match="position"):
            entries.child_names("", [0, outside])
        with pytest.raises(ValueError, match="position"):
            entries.stats([outside])


def test_path_ends_that_do_not_cut_the_paths_are_a_fault_not_a_read() -> None:
    """The C pass reads paths only within their bytes: an end past them or before the one
    before is named, never read."""
    dirs = {b"": -1}
    assert parents(b"ab", array("I", [1, 2]), dirs) == (
        array("i", [-1, -1]).tobytes(),
        0,
        0,
    )
    assert parents(b"ab", array("I", [1, 3]), dirs)[1:] == (FAULT_ENDS, 1)
    assert parents(b"ab", array("I", [2, 1]), dirs)[1:] == (FAULT_ENDS, 1)


def test_files_unlike_of_the_same_paths_finds_each_change_in_any_block() -> None:
    """Manifests that list the same paths and kinds are compared a block of columns at a
    time: a change of XET hash, size or SHA-256 (given, dropped or other) is found wherever
    it is, and the rows are those the walk in path order gives."""
    count = 3 * UNLIKE_BLOCK + 7
    names = [f"d/f{i:05d}" for i in range(count)]

    def entries(changes: dict[int, tuple[int, bytes, bytes | None]]) -> Entries:
        made = [Entry("d", Kind.DIR, 0, 0o755, 0)]
        for i, name in enumerate(names):
            size, xet, sha = changes.get(i, (i, i.to_bytes(32, "big"), b"s" * 32))
            made.append(Entry(name, Kind.FILE, size, 0o644, 0, xet, sha))
        return build(ARK, made, created=1.0).entries

    before = entries({})
    changes = {
        0: (0, b"x" * 32, b"s" * 32),  # another XET hash
        UNLIKE_BLOCK: (7, UNLIKE_BLOCK.to_bytes(32, "big"), b"s" * 32),  # another size
        2 * UNLIKE_BLOCK + 5: (
            2 * UNLIKE_BLOCK + 5,
            (2 * UNLIKE_BLOCK + 5).to_bytes(32, "big"),
            None,
        ),
        count - 1: (count - 1, (count - 1).to_bytes(32, "big"), b"t" * 32),  # another SHA-256
    }
    after = entries(changes)
    found = list(after.files_unlike(before))
    assert [after.path(i) for i, *_ in found] == [names[i] for i in sorted(changes)]
    assert [(size, xet, sha) for _, xet, size, sha in found] == [
        changes[i] for i in sorted(changes)
    ]
    assert list(before.files_unlike(entries({}))) == []


def _entries_named(names: set[str], changed: frozenset[str] = frozenset()) -> list[Entry]:
    """Entries under one directory: files (some with attributes or changed content), and
    symlinks for names starting with 'l'."""
    made = [Entry("d", Kind.DIR, 0, 0o755, 1)]
    for name in sorted(names):
        path, mark = f"d/{name}", bytes([len(name) + (name in changed)])
        if name.startswith("l"):
            made.append(Entry(path, Kind.SYMLINK, 1, 0o777, 2, target=name))
        else:
            xattrs = (("user.n", name.encode()),) if "x" in name else ()
            made.append(Entry(path, Kind.FILE, 3, 0o644, 3, mark * 32, H1, xattrs=xattrs))
    return made


file_names = st.sets(st.from_regex(r"[a-z]{1,3}", fullmatch=True), max_size=24)


@given(file_names, file_names, st.data())
def test_merged_columns_are_the_columns_of_the_entries_merged(
    old: set[str], added: set[str], data: st.DataObject
) -> None:
    """Any entries dropped, kept, changed or added: the merge of the previous columns equals
    the columns built from every entry, with the same links, targets and attributes."""
    kept = data.draw(st.sets(st.sampled_from(sorted(old))) if old else st.just(set()))
    changed = data.draw(st.sets(st.sampled_from(sorted(kept))) if kept else st.just(set()))
    final = kept | added
    before = Entries.of(_entries_named(old))
    wanted = _entries_named(final, frozenset(changed))
    new = [e for e in wanted if e.path[2:] in changed | (added - kept)]
    drop = [i for i in range(len(before)) if before.path(i)[2:] in (old - kept) | changed]
    merged = before.merged(drop, new)
    assert merged == Entries.of(wanted)
    assert list(merged) == wanted


def test_merged_entries_are_checked_and_take_no_hard_links() -> None:
    before = Entries.of(_entries_named({"a", "b"}))
    with pytest.raises(ManifestError, match="parent directory is not listed"):
        before.merged([], [Entry("e/f", Kind.FILE, 1, 0o644, 1, H1)])
    with pytest.raises(ManifestError, match="sorted by path, without repeats"):
        before.merged([], [Entry("d/a", Kind.FILE, 1, 0o644, 1, H1)])  # d/a is kept
    linked = [Entry("d/c", Kind.FILE, 1, 0o644, 1, H1, link="d/c")]
    with pytest.raises(ManifestError, match="hard-linked"):
        before.merged([], [*linked, Entry("d/e", Kind.FILE, 1, 0o644, 1, H1, link="d/c")])


@given(st.lists(st.text(alphabet="a~Z/é\udc80\udcff\U0001f600", max_size=4), max_size=8))
def test_sort_by_path_is_path_order(paths: list[str]) -> None:
    """Sorting by path takes the paths themselves only when that is the UTF-8 byte order:
    a surrogate escape (a byte that is not UTF-8) sorts apart from the code point."""
    entries = [Entry(p, Kind.FILE, 0, 0o644, 0, bytes(32)) for p in paths]
    manifest.sort_by_path(entries, lambda e: e.path)
    assert [e.path for e in entries] == sorted(
        paths, key=lambda p: p.encode("utf-8", "surrogateescape")
    )
