"""The read interface of the exports over an archive service: stored digests and
chunk-verified bytes (the same read path as `?tar`)."""

from collections.abc import Iterator

from arkfs.archive.manifest import Entry
from arkfs.export.bagit import Digest, Read
from arkfs.server.tarball import file_bytes
from arkfs.service.archive_service import ArchiveService
from arkfs.store.files import file_sha256


def stored_digest(service: ArchiveService) -> Digest:
    """A file entry's SHA-256: the manifest's, else hashed from its verified bytes."""

    def digest(entry: Entry) -> bytes:
        if entry.sha256 is not None:
            return entry.sha256
        assert entry.xet_hash is not None  # Manifest guarantees it for files
        return file_sha256(service.store, service.bound_file(entry.xet_hash))

    return digest


def stored_read(service: ArchiveService) -> Read:
    """A file entry's bytes, every chunk verified and exactly entry.size of them."""

    def read(entry: Entry) -> Iterator[bytes]:
        return file_bytes(service, entry)

    return read
