"""`?bag` on an archive root: its BagIt bag (arkfs.export.bagit) as one tar, streamed from
the same verified read path as `?tar` (tarball.py)."""

from arkfs.archive.manifest import Kind
from arkfs.archive.record import Archive
from arkfs.export.bagit import PAYLOAD, tag_files
from arkfs.export.stored import stored_digest
from arkfs.server import tarball
from arkfs.service.archive_service import ArchiveService


def bag_members(service: ArchiveService, archive: Archive, top: str) -> list[tarball.Member]:
    """The tar members of the bag of archive under the directory top: the tag files, then
    the payload (blocking: the digests may be hashed from stored bytes)."""
    created = archive.version.created
    tags = [
        tarball.made_file(f"{top}/{name}", data, created)
        for name, data in tag_files(archive, stored_digest(service))
    ]
    payload = tarball.members(archive.manifest, "", f"{top}/{PAYLOAD}")
    # members() gives the payload directory, then one member per entry in manifest order;
    # a bag holds no symlinks (bagit.py lists them in a tag file instead).
    entries = archive.manifest.entries
    kept = [m for e, m in zip(entries, payload[1:], strict=True) if e.kind is not Kind.SYMLINK]
    return [tarball.made_dir(top, created), *tags, payload[0], *kept]
