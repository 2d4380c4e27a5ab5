"""ArchiveService rules the backend contract suite cannot see from outside: the dedup key's
rotation, the archive cache, what counts as damage, the range rule and the intake limits."""

import random
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from arkfs.archive.manifest import Kind, Manifest, build
from arkfs.service.archive_service import (
    DEDUP_KEY_TTL,
    MAX_SHARD_SIZE,
    ArchiveService,
    clip_range,
)
from arkfs.store.base import Binding
from arkfs.store.errors import NotFound, OutOfRange, Rejected, StoreCorrupt
from arkfs.store.local import LocalStore
from arkfs.xet.constants import MAX_XORB_ACCEPTED
from arkfs.xet.hashing import ZERO_HASH, hash_to_string
from arkfs.xet.shard import Shard, parse_shard, serialize_upload
from tests.backend.content import Content, build_content, erc_of, manifest_of

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`

SECRET = bytes(range(32))
NOW = 1_700_000_000 // DEDUP_KEY_TTL * DEDUP_KEY_TTL  # the start of a key period


@pytest.fixture
def store(tmp_path: Path) -> Iterator[LocalStore]:
    with LocalStore.open(tmp_path / "store") as s:
        yield s


def filled(store: LocalStore, seed: int = 1) -> tuple[ArchiveService, Content]:
    service = ArchiveService(store, SECRET, "in the test store")
    content = build_content({"f": random.Random(seed).randbytes(300_000)})
    for x in content.xorbs:
        assert service.put_xorb(x.hash, x.data)
    assert service.put_shard(content.shard)
    return service, content


def key_of(shard: Shard) -> bytes:
    assert shard.footer is not None
    return shard.footer.chunk_hash_key


def test_dedup_keys_rotate_each_period_and_depend_on_the_secret(store: LocalStore) -> None:
    service, content = filled(store)
    chunk = content.files["f"].chunks[0]

    def key(svc: ArchiveService, now: int) -> bytes:
        shard = svc.dedup_shard(chunk, now)
        assert shard is not None and shard.footer is not None
        assert shard.footer.key_expiry == now + DEDUP_KEY_TTL
        return key_of(shard)

    assert key(service, NOW) == key(service, NOW + DEDUP_KEY_TTL - 1)
    assert key(service, NOW) != key(service, NOW + DEDUP_KEY_TTL)
    other = ArchiveService(store, bytes(32), "elsewhere")
    assert key(other, NOW) != key(service, NOW)
    assert service.dedup_shard(bytes(range(32))) is None
    with pytest.raises(ValueError, match="32 bytes"):
        ArchiveService(store, b"short", "here")


def test_archives_are_parsed_once_per_binding(store: LocalStore) -> None:
    service, content = filled(store)
    manifest = manifest_of(content.files)
    bound = service.bind(manifest.ark, manifest.to_msgpack(), erc_of().to_anvl())
    assert service.archive(manifest.ark) is bound
    assert str(bound.ark) == manifest.ark
    rebound = service.bind(manifest.ark, manifest.to_msgpack(), erc_of().to_anvl())
    assert service.archive(manifest.ark) is rebound is not bound
    # Another service on the same store (another replica) sees the new binding too.
    assert ArchiveService(store, SECRET, "there").archive(manifest.ark) == rebound


def test_each_version_is_parsed_once_and_kept(store: LocalStore) -> None:
    service, content = filled(store)
    manifest = manifest_of(content.files)
    first = service.bind(manifest.ark, manifest.to_msgpack(), erc_of().to_anvl())
    second = service.bind(manifest.ark, manifest.to_msgpack(), erc_of().to_anvl(), "again")
    assert (first.version.version, second.version.version) == (1, 2)
    assert (second.version.follows, second.version.message) == (1, "again")
    assert service.archive(manifest.ark, 1) is first
    assert service.archive(manifest.ark) is service.archive(manifest.ark, 2) is second
    assert service.versions(manifest.ark) == [first.version, second.version]
    no_v3 = f"{manifest.ark} has no version 3 in the test store; its versions are 1 to 2"
    with pytest.raises(NotFound, match=no_v3):
        service.archive(manifest.ark, 3)
    with pytest.raises(NotFound, match="ark:99999/fk4none is not bound in the test store"):
        service.versions("ark:99999/fk4none")


def test_damaged_bindings_are_store_corruption(store: LocalStore) -> None:
    service = ArchiveService(store, SECRET, "here")
    manifest = manifest_of({})
    store.bind(Binding(manifest.ark, b"\x93garbage", erc_of().to_anvl(), 1.0))
    with pytest.raises(StoreCorrupt, match=f"the binding of {manifest.ark} here is damaged"):
        service.archive(manifest.ark)
    other = "ark:99999/fk4other"
    store.bind(Binding(other, manifest.to_msgpack(), erc_of().to_anvl(), 2.0))
    with pytest.raises(StoreCorrupt, match=f"holds the manifest of {manifest.ark}"):
        service.archive(other)
    with pytest.raises(NotFound, match="ark:99999/fk4none is not bound here"):
        service.archive("ark:99999/fk4none")


def test_a_bind_refuses_an_ark_other_than_the_manifests(store: LocalStore) -> None:
    service = ArchiveService(store, SECRET, "here")
    manifest = manifest_of({})
    with pytest.raises(Rejected, match=f"the manifest is of {manifest.ark}"):
        service.bind("ark:99999/fk4other", manifest.to_msgpack(), erc_of().to_anvl())
    assert service.list_archives() == []


def test_the_empty_file_needs_no_storage(store: LocalStore) -> None:
    service = ArchiveService(store, SECRET, "here")
    assert service.has_file(ZERO_HASH, 0) and not service.has_file(ZERO_HASH, 1)
    assert service.bound_file(ZERO_HASH).size == 0
    rec = service.reconstruction(service.file(ZERO_HASH), 0, 0, hash_to_string)
    assert rec.terms == () and rec.fetch == {}
    with pytest.raises(OutOfRange, match="past its end"):
        service.reconstruction(service.file(ZERO_HASH), 0, 1, hash_to_string)


def test_a_lost_xorb_under_a_stored_file_is_damage_not_absence(store: LocalStore) -> None:
    service, content = filled(store)
    f = content.files["f"]
    record = service.file(f.hash)
    name = hash_to_string(content.xorbs[-1].hash)
    (store.root / "xorbs" / name[:2] / name).unlink()
    fresh = ArchiveService(LocalStore.open(store.root), SECRET, "here")  # no cached footers
    with pytest.raises(StoreCorrupt, match=f"xorb {name} is missing here"):
        fresh.reconstruction(record, 0, len(f.data), hash_to_string)
    with pytest.raises(StoreCorrupt, match=f"xorb {name} is missing"):
        fresh.bound_file(f.hash)
    with pytest.raises(StoreCorrupt, match="yet a binding names it"):
        fresh.bound_file(bytes(range(32)))
    with pytest.raises(NotFound, match=r"no file \w+ here"):
        fresh.file(bytes(range(32)))


def test_terms_that_disagree_with_the_footers_are_damage(store: LocalStore) -> None:
    service, content = filled(store)
    record = service.file(content.files["f"].hash)
    term = record.terms[0]
    beyond = replace(term, start=term.end + 50, end=term.end + 100)  # chunks the xorb lacks
    bad = replace(record, terms=(beyond, *record.terms[1:]))
    with pytest.raises(StoreCorrupt, match="stored terms disagree"):
        service.reconstruction(bad, 1000, 2000, hash_to_string)


def test_clip_range() -> None:
    assert clip_range(10, 0, 10, "x") == (0, 10)
    assert clip_range(10, 3, 99, "x") == (3, 10)
    assert clip_range(10, 9, 10, "x") == (9, 10)
    for start, end, words in [(10, 11, "past its end"), (5, 5, "no range"), (-1, 3, "no range")]:
        with pytest.raises(OutOfRange, match=words):
            clip_range(10, start, end, "x")
    with pytest.raises(OutOfRange, match="past its end"):
        clip_range(0, 0, 0, "the empty file")  # only a reconstruction takes the empty whole


def test_intake_limits(store: LocalStore) -> None:
    service = ArchiveService(store, SECRET, "here")
    with pytest.raises(Rejected, match="exceeds"):
        service.put_xorb(bytes(32), bytes(MAX_XORB_ACCEPTED + 1))
    with pytest.raises(Rejected, match="exceeds"):
        service.put_shard(bytes(MAX_SHARD_SIZE + 1))


def test_a_bind_verifies_every_sha256_it_is_given(store: LocalStore) -> None:
    service = ArchiveService(store, SECRET, "here")
    content = build_content({"f": b"f" * 90_000, "g": random.Random(2).randbytes(70_000)})
    shard = parse_shard(content.shard)
    undigested = tuple(replace(b, sha256=None) if b.size == 70_000 else b for b in shard.files)
    for x in content.xorbs:
        service.put_xorb(x.hash, x.data)
    service.put_shard(serialize_upload(replace(shard, files=undigested)))
    manifest = manifest_of(content.files)

    def with_sha256(name: str, sha256: bytes | None) -> bytes:
        entries = [replace(e, sha256=sha256) if e.path == name else e for e in manifest.entries]
        return build(manifest.ark, entries, created=1.0).to_msgpack()

    erc = erc_of().to_anvl()
    for name in ("data/f", "data/g"):  # g's shard gave no digest: its bytes are hashed
        with pytest.raises(Rejected, match=f"entry '{name}': sha256 0{{64}}, but file"):
            service.bind(manifest.ark, with_sha256(name, bytes(32)), erc)
    assert service.list_archives() == []
    service.bind(manifest.ark, with_sha256("data/g", None), erc)  # no digest claims none
    assert service.bind(manifest.ark, manifest.to_msgpack(), erc).manifest == manifest


def test_a_metadata_only_bind_checks_no_file_again_and_any_other_bind_does(
    store: LocalStore,
) -> None:
    service, content = filled(store)
    manifest = manifest_of(content.files)
    erc = erc_of().to_anvl()
    service.bind(manifest.ark, manifest.to_msgpack(), erc)
    asked: list[int] = []
    file_sizes = store.file_sizes

    def counted(hashes: Sequence[bytes]) -> dict[bytes, tuple[int, bytes | None]]:
        asked.append(len(hashes))
        return file_sizes(hashes)

    store.file_sizes = counted  # type: ignore[method-assign]
    renamed = [replace(e, path=e.path.replace("data/", "data/x")) for e in manifest.entries]
    service.bind(manifest.ark, build(manifest.ark, renamed, created=2.0).to_msgpack(), erc)
    assert asked == []  # the same files at the same places: checked when v1 was bound
    # the same count and total size, but another file: checked, and refused
    other = build_content({"f": random.Random(9).randbytes(300_000)}).files["f"].hash
    swapped = [replace(e, xet_hash=other) if e.kind is Kind.FILE else e for e in manifest.entries]
    with pytest.raises(Rejected, match="is not in the test store"):
        service.bind(manifest.ark, build(manifest.ark, swapped, created=3.0).to_msgpack(), erc)
    assert asked == [1]


def test_a_version_bound_again_keeps_the_stored_manifest_and_parses_none(
    store: LocalStore,
) -> None:
    """A metadata-only version: the store copies the manifest of the version named, its
    file and byte counts with it; nothing parses it, and the ERC alone is read to tell the
    latest version's record."""
    service, content = filled(store)
    manifest = manifest_of(content.files)
    first = service.bind(manifest.ark, manifest.to_msgpack(), erc_of().to_anvl())
    parsed: list[int] = []
    from_msgpack = Manifest.from_msgpack

    def counted(data: bytes | memoryview) -> Manifest:
        parsed.append(len(data))
        return from_msgpack(data)

    fresh = ArchiveService(store, SECRET, "in the test store")  # nothing cached
    new_erc = replace(erc_of(), what="Renamed")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Manifest, "from_msgpack", staticmethod(counted))
        assert fresh.record(manifest.ark) == (first.version, erc_of())
        v2 = fresh.bind_again(manifest.ark, 1, new_erc.to_anvl(), "metadata change")
        assert fresh.record(manifest.ark) == (v2, new_erc)
    assert parsed == []
    assert (v2.version, v2.follows, v2.message) == (2, 1, "metadata change")
    assert (v2.files, v2.bytes) == (first.version.files, first.version.bytes)
    stored = [store.get_binding(manifest.ark, v).manifest for v in (1, 2)]
    assert stored[0] == stored[1]
    assert fresh.versions(manifest.ark)[-1] == v2
    v3 = service.bind_again(manifest.ark, 1, new_erc.to_anvl())
    again = service.archive(manifest.ark)  # v1's parse, kept, is v3's manifest
    assert again.manifest is first.manifest and (again.erc, again.version) == (new_erc, v3)
    with pytest.raises(NotFound, match="has no version 7 in the test store; its latest is 3"):
        service.bind_again(manifest.ark, 7, new_erc.to_anvl())
    with pytest.raises(Rejected, match="ERC record"):
        service.bind_again(manifest.ark, 1, "not anvl at all")
    assert [v.version for v in service.versions(manifest.ark)] == [1, 2, 3]


def test_a_bind_checks_only_the_files_the_latest_version_does_not_list_alike(
    store: LocalStore,
) -> None:
    """A republish that changed a few files of many looks up only those: a file the
    latest version lists at the same path with the same hashes and size was checked when
    that version was bound."""
    service = ArchiveService(store, SECRET, "in the test store")
    content = build_content({n: random.Random(i).randbytes(20_000) for i, n in enumerate("fgh")})
    for x in content.xorbs:
        service.put_xorb(x.hash, x.data)
    service.put_shard(content.shard)
    manifest = manifest_of(content.files)
    erc = erc_of().to_anvl()
    service.bind(manifest.ark, manifest_of({"f": content.files["f"]}).to_msgpack(), erc)
    asked: list[list[bytes]] = []
    file_sizes = store.file_sizes

    def counted(hashes: Sequence[bytes]) -> dict[bytes, tuple[int, bytes | None]]:
        asked.append(list(hashes))
        return file_sizes(hashes)

    store.file_sizes = counted  # type: ignore[method-assign]
    service.bind(manifest.ark, manifest.to_msgpack(), erc)  # g and h added
    assert asked == [[content.files["g"].hash, content.files["h"].hash]]
    asked.clear()
    wrong = [replace(e, sha256=bytes(32)) if e.path == "data/h" else e for e in manifest.entries]
    with pytest.raises(Rejected, match=r"entry 'data/h': sha256 0{64}, but file"):
        service.bind(manifest.ark, build(manifest.ark, wrong, created=2.0).to_msgpack(), erc)
    assert asked == [[content.files["h"].hash]]
    moved = [replace(e, path=e.path.replace("/g", "/e")) for e in manifest.entries]
    asked.clear()  # a file moved is looked up again at its new path
    service.bind(manifest.ark, build(manifest.ark, moved, created=3.0).to_msgpack(), erc)
    assert asked == [[content.files["g"].hash]]
