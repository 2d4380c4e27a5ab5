"""`arkfs get`'s work: a file, a directory or an archive copied to local disk, every byte
verified, in parallel, resumable, never a partly written file under its final name.

Bytes come through arkfs.api's Client (the mount's read path: chunk hashes, the chunk
cache, mirrors, tokens). A file is written in PIECE-sized pieces by `jobs` threads into
`.NAME.arkfs-part`, past the page cache where the file system allows (arkfs.util.direct:
a GiB through the page cache cost up to a core-second here); each piece written of a
file of several is noted in `.NAME.arkfs-part.done`, so a rerun after an interruption
fetches only the pieces missing (a file of one piece is fetched again). A file is
renamed to NAME, with its mode and mtime, once every piece is written, and, if any piece
was written by an earlier run, once the whole file's SHA-256 matches the manifest's.

What vouches for each byte: a piece fetched by this run is the read path's bytes, each
checked against its chunk hash in the file's map, a map accepted only if its chunk hashes
and sizes give the manifest's XET file hash; those very buffers are written, at their
offsets. Hashing them again with SHA-256 proved nothing more and cost a core-second per
GiB. A piece an earlier run wrote is bytes on disk that no hash has seen since (the part
file and its record are not fsynced piece by piece, and anyone may change them), so a
file with such pieces is checked whole against its SHA-256: the pieces are fed in file
order as they land (the bytes just written, while later pieces are still being fetched;
read back from the part file only for pieces an earlier run wrote: a piece more than AHEAD
pieces ahead of the digest waits to be fetched), so the check waits only for the last
piece. A file already at NAME with the manifest's size and SHA-256 is kept, not fetched;
one that differs is fetched again. Symlinks are made as the mount shows them, and so are
hard links (a group is fetched once, then linked; copied where the file system makes no
links) and the user.* extended attributes published with each entry; directories get
their modes and mtimes last.
"""

import contextlib
import errno
import fnmatch
import hashlib
import io
import os
import shutil
import threading
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from arkfs.api import CLIENT_GROUP_BYTES, ArkFile, Client, Resolved
from arkfs.archive.manifest import Entry, Kind, Xattrs
from arkfs.util.direct import DirectFile
from arkfs.util.pagecache import let_go
from arkfs.util.sizes import human

PIECE = CLIENT_GROUP_BYTES  # bytes fetched and written by one job at a time: one request each
PART = ".arkfs-part"
DONE = ".done"
HASH_BLOCK = 1024 * 1024
AHEAD = 4  # pieces fetched ahead of the digest, held in memory until it takes them
Parts = list[bytes | memoryview]  # a piece's bytes, as the read path hands them over


class DownloadError(OSError):
    """A file could not be downloaded and checked; the message says which and why."""


PHASES = ("list", "fetch", "check")


@dataclass
class GetProgress:
    """What a get has done so far (plain ints: a display thread only reads them)."""

    files: int = 0  # files to have
    total: int = 0  # their bytes
    done: int = 0  # bytes in place: fetched now, or found right already
    fetched: int = 0  # bytes fetched by this run
    checked: int = 0  # bytes of files in place, checked (chunk by chunk, or whole)
    to_hash: int = 0  # bytes of resumed files, each to be checked whole against its SHA-256
    hashed: int = 0  # of those, the bytes checked
    kept: int = 0  # files found right already
    xattrs_lost: int = 0  # entries whose user.* attributes DEST's file system would not keep
    dest: Path | None = None  # where it all went, once it is all there
    phases: list[str] = field(default_factory=lambda: [PHASES[0]])  # begun, in order
    began: dict[str, tuple[int, int]] = field(default_factory=lambda: {PHASES[0]: (0, 1)})
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def begin(self, phase: str) -> None:
        """Note that phase (one of PHASES) has begun, and overall() then; again is a no-op."""
        with self.lock:
            if phase not in self.phases:
                self.began[phase] = self.overall()
                self.phases.append(phase)

    def add(self, done: int, fetched: int) -> None:
        with self.lock:
            self.done += done
            self.fetched += fetched

    def check(self, size: int, whole: bool = False) -> None:
        """A file of size bytes is in place and checked (whole: against its SHA-256, as a
        resumed file is)."""
        self.begin("check")
        with self.lock:
            self.hashed += size if whole else 0
            self.checked += size

    def overall(self) -> tuple[int, int]:
        """Work done and work known, in bytes: having each byte, hashing each byte of a
        resumed file again, and one more for the end, so done reaches known only once every
        file is in place. (A fresh file's chunks are checked as they come: no more work.)"""
        return self.done + self.hashed + (self.dest is not None), self.total + self.to_hash + 1


@dataclass(frozen=True)
class Selection:
    """Which paths a get takes (--include, --exclude), as `hf download` chooses: a path is
    taken if it matches an include pattern (or none is given) and no exclude pattern.
    Patterns are fnmatch's, against the path below what the ARK names: `*` crosses `/`,
    and a pattern ending in `/` takes a whole directory."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    @property
    def everything(self) -> bool:
        return not self.include and not self.exclude

    def takes(self, path: str) -> bool:
        def matches(patterns: tuple[str, ...]) -> bool:
            return any(
                fnmatch.fnmatchcase(path, p + "*" if p.endswith("/") else p) for p in patterns
            )

        return (not self.include or matches(self.include)) and not matches(self.exclude)


def target(found: Resolved, dest: Path | None, into: bool = False) -> Path:
    """Where found goes: dest (a file into dest when dest is a directory, as cp puts it, or
    into says it is one: a DEST ending in /, as `aws s3 cp` reads it), else its last name
    component (the archive's Name)."""
    name = found.path.rpartition("/")[2] if found.path else found.archive.rpartition("/")[2]
    if dest is None:
        return Path(name)
    is_file = found.entry is not None and found.entry.kind == Kind.FILE
    return dest / name if is_file and (into or dest.is_dir()) else dest


class Layout(NamedTuple):
    """What a get of an ARK puts where: files to fetch, hard links of them, symlinks and
    directories (each with its entry), under out."""

    found: Resolved
    out: Path
    files: list[tuple[Entry, Path]]
    hardlinks: list[tuple[Entry, Path, Path]]  # (entry, path, the fetched path it links to)
    links: list[tuple[Entry, Path]]
    dirs: list[tuple[Entry, Path]]


def layout(client: Client, ark: str, dest: Path | None, selection: Selection, into: bool) -> Layout:
    """Where each entry that a get of ark (the paths selection takes) goes under dest
    (default and into: target()); nothing is written."""
    found, entries = client.tree(ark)
    out = target(found, dest, into)
    if found.entry is not None and found.entry.kind == Kind.FILE:
        return Layout(found, out, [(found.entry, out)], [], [], [])
    skip = len(found.path) + 1 if found.path else 0
    where = [(e, e.path[skip:]) for e in entries]
    taken = [(e, rel) for e, rel in where if e.kind == Kind.DIR or selection.takes(rel)]
    files = [(e, out / rel) for e, rel in taken if e.kind == Kind.FILE]
    links = [(e, out / rel) for e, rel in taken if e.kind == Kind.SYMLINK]
    if not selection.everything and not files and not links:
        raise DownloadError(f"nothing in {found.ark} matches --include/--exclude")
    dirs = [(found.top, out), *((e, out / rel) for e, rel in taken if e.kind == Kind.DIR)]
    if not selection.everything:  # only the directories that hold what it took
        needed = {p.parent for _, p in files + links}
        needed |= {a for p in needed for a in p.parents}
        dirs = [dirs[0], *((e, p) for e, p in dirs[1:] if p in needed)]
    files, hardlinks = _one_per_inode(files)
    return Layout(found, out, files, hardlinks, links, dirs)


class Preview(NamedTuple):
    """What a get would do, found without writing anything (`--dry-run`)."""

    out: Path
    todo: list[tuple[str, Path, int]]  # (fetch, resume, link or symlink; path; bytes to fetch)
    in_place: int  # files, hard links and symlinks already as the archive has them


def preview(
    client: Client, ark: str, dest: Path | None, selection: Selection, into: bool
) -> Preview:
    """What a get of ark to dest would fetch or link; files found at their paths are
    checked as a get checks them (size and SHA-256)."""
    _, out, files, hardlinks, links, _ = layout(client, ark, dest, selection, into)
    todo: list[tuple[str, Path, int]] = []
    right = {path for entry, path in files if _same_bytes(path, entry)}
    for entry, path in files:
        if path not in right:
            have = _resume(path, entry.size).have
            missing = entry.size - _bytes_of(have, entry.size)
            todo.append(("resume" if have else "fetch", path, missing))
    for _, path, source in hardlinks:  # a source fetched again is a new inode: linked again
        if source not in right or not _same_inode(source, path):
            todo.append(("link", path, 0))
    for entry, path in links:
        if not (path.is_symlink() and os.readlink(path) == entry.target):
            todo.append(("symlink", path, 0))
    return Preview(out, todo, len(files) + len(hardlinks) + len(links) - len(todo))


def get(
    client: Client,
    ark: str,
    dest: Path | None,
    progress: GetProgress,
    jobs: int,
    selection: Selection = Selection(),
    into: bool = False,
) -> Path:
    """Download what ark names (the paths selection takes, in a directory) to dest
    (default and into: target()), making the directories it goes in; return where it
    went."""
    found, out, files, hardlinks, links, dirs = layout(client, ark, dest, selection, into)
    base = f"{found.archive}/@v{found.version}"
    if not dirs:  # one file: the directories it goes in, as `hf download`, `aws s3 cp` make
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DownloadError(f"{out.parent}: cannot be a directory ({exc.strerror})") from None
    for _, path in dirs:
        path.mkdir(parents=True, exist_ok=True)
    progress.files = len(files) + len(hardlinks)
    progress.total = sum(e.size for e, _ in files) + sum(e.size for e, _, _ in hardlinks)
    resumes = [_resume(path, entry.size) for entry, path in files]  # each record read once
    writes = list(map(_to_write, files, resumes))
    _check_space(out, sum(writes))
    if len(files) > 1:  # the maps of the files to write, many to a request (Client.preload)
        client.preload(base, [entry for (entry, _), n in zip(files, writes, strict=True) if n])
    progress.begin("fetch")
    with ThreadPoolExecutor(max(1, jobs), thread_name_prefix="arkfs-get") as pool:
        futures: list[Future[None]] = []
        try:
            for (file, path), resume in zip(files, resumes, strict=True):
                # each file's pieces start as soon as it is planned
                job = _plan(client, f"{base}/{file.path}", file, path, resume, progress)
                if job is not None:
                    futures += job.submit(pool)
            finished, _ = wait(futures, return_when=FIRST_EXCEPTION)
            failed = next((f.exception() for f in finished if f.exception() is not None), None)
            if failed is not None:
                raise failed
        finally:  # interrupted or failed: the pieces not begun are not fetched
            pool.shutdown(cancel_futures=True)
    for entry, path, source in hardlinks:
        _hardlink(entry, source, path)
        _set_xattrs(path, entry.xattrs, progress)  # a copy's; a link's are its group's
        progress.add(entry.size, 0)
        progress.check(entry.size)
    for link, path in links:
        _symlink(link, path)
    for folder, path in reversed(dirs):  # deepest last in path order: set them first
        _set_xattrs(path, folder.xattrs, progress)  # while its mode still lets us
        os.chmod(path, folder.mode)
        os.utime(path, ns=(folder.mtime_ns, folder.mtime_ns))
    progress.begin("check")  # a get of empty files only checks nothing
    progress.dest = out
    return out


class _Resume(NamedTuple):
    """Where a file is written before its rename, the record of its pieces written there,
    and the pieces an interrupted run wrote."""

    part: Path
    record: Path
    have: set[int]


def _resume(path: Path, size: int) -> _Resume:
    """What an earlier get of the size-byte file at path left to resume from."""
    part = _part(path)
    record = part.with_name(part.name + DONE)
    return _Resume(part, record, _pieces_done(part, record, size))


def _part(path: Path) -> Path:
    """The temporary name a file or symlink is made under, beside path, before its rename."""
    return path.with_name(f".{path.name}{PART}")


def _bytes_of(pieces: set[int], size: int) -> int:
    """The bytes of the pieces at offsets pieces of a size-byte file."""
    return sum(min(PIECE, size - at) for at in pieces)


def _plan(
    client: Client, ark: str, entry: Entry, path: Path, resume: _Resume, progress: GetProgress
) -> "_FileJob | None":
    """The job of one file: its pieces still missing; None if path is that file already."""
    if _is_right(path, entry):
        _set_xattrs(path, entry.xattrs, progress)
        progress.kept += 1
        progress.add(entry.size, 0)
        progress.check(entry.size)
        return None
    progress.add(_bytes_of(resume.have, entry.size), 0)
    todo = [at for at in range(0, max(entry.size, 1), PIECE) if at not in resume.have]
    if entry.size == 0:
        todo = [0]
    job = _FileJob(client, ark, entry, path, resume.part, resume.record, todo, progress)
    if job.digest is not None:
        with progress.lock:
            progress.to_hash += entry.size
    return job


def _to_write(file: tuple[Entry, Path], resume: _Resume) -> int:
    """Bytes a get writes for one file at most: none if its path has its size already (it
    is checked later), else those of the pieces an earlier run has not written."""
    entry, path = file
    with contextlib.suppress(OSError):
        if path.stat().st_size == entry.size and not path.is_symlink():
            return 0
    return entry.size - _bytes_of(resume.have, entry.size)


def _check_space(out: Path, missing: int) -> None:
    """Refuse to start a get whose bytes would not fit where they go (DownloadError)."""
    where = next((p for p in (out, *out.absolute().parents) if p.exists()), Path("/"))
    stat = os.statvfs(where)
    free = stat.f_bavail * stat.f_frsize
    if missing > free:
        raise DownloadError(
            f"{out}: {human(missing)} to write, {human(free)} free there; "
            "free some space or choose another DEST"
        )


class _FileJob:
    """One file being written, piece by piece, by several threads. Its part file and its
    bytes are opened by the first piece to run (so only the files under way hold a
    descriptor, however many files there are) and closed by the last."""

    def __init__(
        self,
        client: Client,
        ark: str,
        entry: Entry,
        path: Path,
        part: Path,
        record: Path,
        todo: list[int],
        progress: GetProgress,
    ) -> None:
        self.client, self.ark, self.entry, self.path = client, ark, entry, path
        self.part, self.record, self.left, self.progress = part, record, len(todo), progress
        self.lock = threading.Lock()  # file, opened, left, written, hashed, failed
        self.fed = threading.Condition(self.lock)  # notified as hashed moves on, or on failure
        self.failed = False  # a piece failed: the digest will not move on
        self.file: DirectFile | None = None
        self.opened: io.BufferedReader[ArkFile] | None = None
        self.todo = todo
        self.written = {at for at in range(0, entry.size, PIECE)} - set(todo)
        self.hashed = 0  # bytes of the part file fed to the digest, from the start
        self.ahead: dict[int, Parts] = {}  # pieces written, not yet fed
        # Only a file with pieces of an earlier run is checked whole (the module docstring).
        self.digest = hashlib.sha256() if self.written else None
        self.turn = threading.Lock()  # held by the one thread feeding the digest

    def submit(self, pool: ThreadPoolExecutor) -> "list[Future[None]]":
        """Submit the pieces still missing (the last to finish completes the file), or, if
        an earlier run wrote them all and stopped before the rename, the completion."""
        if not self.todo:
            return [pool.submit(self.finish)]
        return [pool.submit(self.piece, at) for at in self.todo]

    def finish(self) -> None:
        """Complete a file whose every piece an earlier run wrote: check it, rename it (no
        reader is opened: nothing is fetched)."""
        assert self.digest is not None
        file = DirectFile(self.part, self.entry.size)
        self._feed(file.fd, wait=True)
        sha256 = self.digest.digest()
        _complete(file, self.part, self.record, self.path, self.entry, sha256, self.progress)
        self.progress.check(self.entry.size, whole=True)

    def _open(self) -> tuple[DirectFile, ArkFile]:
        with self.lock:
            if self.file is None:
                self.opened = self.client.open_listed(self.ark, self.entry)
                self.file = DirectFile(self.part, self.entry.size)
                os.ftruncate(self.file.fd, self.entry.size)
            assert self.opened is not None
            return self.file, self.opened.raw

    def piece(self, at: int) -> None:
        """Fetch, write and note the piece at offset at; complete the file after its last."""
        # Hashing is one thread's, in file order: a piece fetched far ahead of it would be
        # dropped from memory and read back (100 of 256 pieces of a 1 GiB get were). The
        # pieces an earlier run wrote are fed first (read back from the part file): the
        # digest must reach them before a piece beyond them can be fetched.
        try:
            file, raw = self._open()
            if self.digest is not None:
                self._feed(file.fd, wait=False)
            with self.fed:
                self.fed.wait_for(lambda: self.failed or self._may_fetch(at))
                if self.failed:
                    return  # the failure is the get's error; this piece is not needed
            data = raw.pread_parts(at, PIECE) if self.entry.size else []
            try:
                n = file.pwrite_parts(data, at)
            except OSError as exc:  # ENOSPC, EIO, ...: say which file
                raise OSError(exc.errno, exc.strerror, str(self.path)) from None
        except BaseException:
            with self.fed:
                self.failed = True
                self.fed.notify_all()
            raise
        if file.direct is None:  # start writing the piece back now, so the fsync before
            # the rename has little left to wait for (0.25-0.7 s of a 1 GiB get, else)
            let_go(file.fd, at, n)
        with self.lock:
            if self.entry.size > PIECE:  # a file of one piece is simply fetched again
                with open(self.record, "a") as r:
                    r.write(f"{at}\n")
            self.written.add(at)
            if self.digest is not None:
                self.ahead[at] = data
            self.left -= 1
            last = self.left == 0
        self.progress.add(n, n)
        sha256 = None
        if self.digest is not None:
            self._feed(file.fd, wait=last)
            sha256 = self.digest.digest() if last else None
        if last:
            assert self.opened is not None
            assert self.digest is None or self.hashed == self.entry.size
            self.opened.close()
            _complete(file, self.part, self.record, self.path, self.entry, sha256, self.progress)
            self.progress.check(self.entry.size, whole=self.digest is not None)

    def _may_fetch(self, at: int) -> bool:
        """Whether the piece at offset at may be fetched now: at most AHEAD pieces ahead
        of the digest, when there is one (under self.lock)."""
        return self.digest is None or at < self.hashed + AHEAD * PIECE

    def _feed(self, fd: int, wait: bool) -> None:
        """Feed the digest the pieces now written in order after those fed; when another
        thread is at it, leave them to it (it looks again before it stops), unless wait
        (the last piece: every piece is written, and all must be fed)."""
        while self.turn.acquire(blocking=wait):
            try:
                while (at := self._next()) is not None:
                    n = min(PIECE, self.entry.size - at)
                    with self.lock:
                        data = self.ahead.pop(at, None)
                    assert self.digest is not None
                    for part in [os.pread(fd, n, at)] if data is None else data:
                        self.digest.update(part)
                    with self.fed:
                        self.hashed = at + n
                        self.fed.notify_all()
            finally:
                self.turn.release()
            if self._next() is None:
                return

    def _next(self) -> int | None:
        """The offset of the next piece to feed the digest, if it is written."""
        with self.lock:
            at = self.hashed
            return at if at < self.entry.size and at in self.written else None


def _complete(
    file: DirectFile,
    part: Path,
    record: Path,
    path: Path,
    entry: Entry,
    sha256: bytes | None,
    progress: GetProgress,
) -> None:
    """Check the whole file (sha256: the bytes written to part, when it has pieces of an
    earlier run), give it its attributes, mode and mtime, and rename it into place."""
    _set_xattrs(file.fd, entry.xattrs, progress)  # synced with the bytes
    os.fsync(file.fd)
    file.close()
    if sha256 is not None and entry.sha256 is not None and sha256 != entry.sha256:
        part.unlink()
        record.unlink(missing_ok=True)
        raise DownloadError(f"{path}: its bytes on disk do not match the manifest's SHA-256")
    os.chmod(part, entry.mode)
    os.utime(part, ns=(entry.mtime_ns, entry.mtime_ns))
    os.replace(part, path)
    record.unlink(missing_ok=True)


def _set_xattrs(where: Path | int, xattrs: Xattrs, progress: GetProgress) -> None:
    """Give a file or directory (a path, or an open descriptor) the user.* extended
    attributes it was published with, as the mount shows them; where DEST's file system
    keeps none or refuses one (or the system has no setxattr: macOS), count the entry in
    progress.xattrs_lost instead."""
    if not xattrs:
        return
    try:
        if not hasattr(os, "setxattr"):
            raise OSError(errno.ENOTSUP, "no extended attributes here")
        for name, value in xattrs:
            with contextlib.suppress(OSError):  # a rerun: most are in place already
                if os.getxattr(where, name) == value:
                    continue
            os.setxattr(where, name, value)
    except OSError:  # ENOTSUP, E2BIG, EACCES, ...: the bytes are right, the attributes are not
        with progress.lock:
            progress.xattrs_lost += 1


def _pieces_done(part: Path, record: Path, size: int) -> set[int]:
    """The pieces an interrupted run wrote to part (none if either file is missing)."""
    try:
        lines = record.read_text().split()
    except OSError:
        return set()
    if not part.exists() or part.stat().st_size != size:
        return set()
    return {int(x) for x in lines if x.isdigit() and int(x) % PIECE == 0 and int(x) < size}


def _is_right(path: Path, entry: Entry) -> bool:
    """Whether path is already the file entry describes (_same_bytes), its mtime set to
    entry's if it was not."""
    if not _same_bytes(path, entry):
        return False
    if path.stat().st_mtime_ns != entry.mtime_ns:
        os.utime(path, ns=(entry.mtime_ns, entry.mtime_ns))
    return True


def _same_bytes(path: Path, entry: Entry) -> bool:
    """Whether path is a file of entry's size and SHA-256 (read whole to tell)."""
    try:
        if path.is_symlink() or path.stat().st_size != entry.size:
            return False
    except OSError:
        return False
    return entry.sha256 is not None and _sha256(path) == entry.sha256


def _same_inode(a: Path, b: Path) -> bool:
    """Whether a and b are names of one file (False if either is missing)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _sha256(path: Path) -> bytes:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(HASH_BLOCK):
            digest.update(block)
    return digest.digest()


def _one_per_inode(
    files: list[tuple[Entry, Path]],
) -> tuple[list[tuple[Entry, Path]], list[tuple[Entry, Path, Path]]]:
    """The files to fetch, and the rest as (entry, path, the fetched path it is a hard link
    of): of each hard-link group (Entry.link) only its first file taken is fetched, as the
    mount shows the group as one inode."""
    first: dict[str, Path] = {}
    fetch: list[tuple[Entry, Path]] = []
    linked: list[tuple[Entry, Path, Path]] = []
    for entry, path in files:
        if entry.link is not None and entry.link in first:
            linked.append((entry, path, first[entry.link]))
            continue
        if entry.link is not None:
            first[entry.link] = path
        fetch.append((entry, path))
    return fetch, linked


def _hardlink(entry: Entry, source: Path, path: Path) -> None:
    """Make path a hard link of source (the file of entry's group, fetched and checked),
    through a temporary name; where the file system makes no links, a copy of source."""
    if _same_inode(source, path):
        return
    tmp = _part(path)
    tmp.unlink(missing_ok=True)
    tmp.with_name(tmp.name + DONE).unlink(missing_ok=True)  # an older run's record of it
    try:
        os.link(source, tmp)
    except OSError:  # EXDEV, EPERM, EMLINK, ENOTSUP: the bytes are right, the link is not
        shutil.copyfile(source, tmp)
        with open(tmp, "rb") as copy:
            os.fsync(copy.fileno())
        os.chmod(tmp, entry.mode)
        os.utime(tmp, ns=(entry.mtime_ns, entry.mtime_ns))
    os.replace(tmp, path)


def _symlink(entry: Entry, path: Path) -> None:
    """Make path the symlink entry is, through a temporary name."""
    assert entry.target is not None
    if path.is_symlink() and os.readlink(path) == entry.target:
        return
    tmp = _part(path)
    tmp.unlink(missing_ok=True)
    os.symlink(entry.target, tmp)
    os.utime(tmp, ns=(entry.mtime_ns, entry.mtime_ns), follow_symlinks=False)
    os.replace(tmp, path)
