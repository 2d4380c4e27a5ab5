"""The Hugging Face Hub's read API over the archives, so huggingface_hub (hf_hub_download,
snapshot_download, HfFileSystem) reads ARKs with hf_xet doing the transfer.

A repo id is an ARK's NAAN and Name (`12345/x6np1wh8k`), for models and datasets alike;
revision `main` is the latest version, `vN` version N, and a version's commit id (the
SHA-1 of `ark:NAAN/Name/@vN`, which X-Repo-Commit gives) that version. The routes, as
huggingface_hub 2.x calls them:
- HEAD/GET /[datasets/]{repo}/resolve/{rev}/{path}: the file's Xet headers (X-Xet-Hash,
  a `xet-auth` Link to the token route, X-Linked-Size, X-Linked-Etag = its SHA-256); a GET
  is redirected to the file's ARK, whose bytes the NMA serves;
- GET /api/{models|datasets}/{repo}[/revision/{rev}]: the repo's info and files;
- GET /api/{models|datasets}/{repo}/tree/{rev}[/{path}]: a directory's entries;
- POST /api/{models|datasets}/{repo}/paths-info/{rev}: named entries (a form, as
  huggingface_hub sends it, or JSON);
- GET /api/{models|datasets}/{repo}/refs: branch `main` and a tag per version;
- GET /api/{models|datasets}/{repo}/commits/{rev}: that version and the ones before it,
  newest first, each titled by its message;
- GET /api/{models|datasets}/{repo}/auth-check: 200 when the token may read the repo;
- GET /api/{models|datasets}/{repo}/xet-read-token/{rev}: a read token for the CAS;
- GET /api/whoami-v2: the token's role (read or write), for `hf auth login` and `whoami`.
Every route needs read scope; an embargoed archive a real read token, a withdrawn one is
410 Gone, as on the NMA. A 404 says what is missing in X-Error-Code (RepoNotFound,
RevisionNotFound, EntryNotFound), as the Hub does: huggingface_hub raises its matching
error from it, and repo_exists, revision_exists and file_exists answer False.
"""

import hashlib
import json
import time
import urllib.parse
from dataclasses import dataclass
from datetime import UTC, datetime

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from arkfs.archive.embargo import embargoed_until
from arkfs.archive.manifest import Entry, Kind, entry_ark
from arkfs.archive.record import Archive, VersionInfo
from arkfs.archive.withdrawal import Withdrawal
from arkfs.ark.errors import ArkError
from arkfs.ark.normalization import parse
from arkfs.ark.version_qualifier import version_name, version_of_name, versioned
from arkfs.server.auth import Scope
from arkfs.server.http import Face, HttpError, read_body
from arkfs.store.errors import NotFound
from arkfs.xet.hashing import hash_to_string

TYPES = ("models", "datasets")
MAIN = "main"
MAX_PATHS_INFO = 1024 * 1024  # bytes of a paths-info request: thousands of paths


def _missing(code: str, message: str) -> HttpError:
    """A 404 that says what is missing as the Hub says it (X-Error-Code: code)."""
    said = message.encode("ascii", "backslashreplace").decode()  # a header is one ASCII line
    return HttpError(404, message, {"X-Error-Code": code, "X-Error-Message": said})


def commit_id(ark: str, version: int) -> str:
    """The commit id of a version, as huggingface_hub wants one: 40 hex digits."""
    return hashlib.sha1(f"{ark}/{version_name(version)}".encode()).hexdigest()


@dataclass
class HubService(Face):
    """The Hub's read routes (see the module docstring)."""

    def routes(self) -> list[Route]:
        out = []
        for kind in TYPES:
            api = f"/api/{kind}/{{naan}}/{{name}}"
            out += [
                Route(api, self.repo_info),
                Route(f"{api}/revision/{{rev}}", self.repo_info),
                Route(f"{api}/tree/{{rev}}", self.tree),
                Route(f"{api}/tree/{{rev}}/{{path:path}}", self.tree),
                Route(f"{api}/paths-info/{{rev}}", self.paths_info, methods=["POST"]),
                Route(f"{api}/refs", self.refs),
                Route(f"{api}/commits/{{rev}}", self.commits),
                Route(f"{api}/auth-check", self.auth_check),
                Route(f"{api}/xet-read-token/{{rev}}", self.read_token),
            ]
        out.append(Route("/api/whoami-v2", self.whoami))
        for prefix in ("", "/models", "/datasets"):
            out.append(
                Route(
                    f"{prefix}/{{naan}}/{{name}}/resolve/{{rev}}/{{path:path}}",
                    self.resolve,
                    methods=["GET", "HEAD"],
                )
            )
        return out

    async def _archive(self, request: Request) -> tuple[str, Archive, list[VersionInfo]]:
        """The archive version the request's repo and revision name, checked for access."""
        self.auth.require(request.headers.get("authorization"), Scope.READ)
        p = request.path_params
        try:
            ark = str(parse(f"ark:{p['naan']}/{p['name']}").base)
        except ArkError as exc:
            raise _missing("RepoNotFound", f"no repo {p['naan']}/{p['name']}: {exc}") from None
        rev = p.get("rev", MAIN)
        try:
            archive, versions, withdrawn = await self.run(self._load, ark, rev)
        except NotFound as exc:
            raise _missing("RepoNotFound", str(exc)) from None
        if withdrawn is not None:
            raise HttpError(410, f"{ark} was withdrawn on {withdrawn.when}: {withdrawn.reason}")
        if embargoed_until(archive.erc, time.time()) is not None:
            self.auth.require(request.headers.get("authorization"), Scope.READ, anonymous=False)
        return ark, archive, versions

    def _load(self, ark: str, rev: str) -> tuple[Archive, list[VersionInfo], Withdrawal | None]:
        """In a worker thread: the version rev names, every version, any withdrawal."""
        every = self.service.versions(ark)
        if rev == MAIN:
            version = every[-1].version
        else:
            named = version_of_name("@" + rev) if rev.startswith("v") else None
            by_id = {commit_id(ark, v.version): v.version for v in every}
            version = named if named is not None else by_id.get(rev, 0)
            if version not in {v.version for v in every}:
                raise _missing(
                    "RevisionNotFound", f"{ark} has no revision {rev!r}: use main, v1, v2, ..."
                )
        archive = self.service.archive(ark, version)
        return archive, every, self.service.withdrawal(ark, version, every)

    async def resolve(self, request: Request) -> Response:
        ark, archive, _ = await self._archive(request)
        path = request.path_params["path"]
        entry = archive.manifest.entry(path)
        if entry is None or entry.kind is not Kind.FILE or entry.xet_hash is None:
            raise _missing("EntryNotFound", f"{path!r} is no file of {ark}")
        version = archive.version.version
        commit = commit_id(ark, version)
        base = str(request.base_url).rstrip("/")
        kind = "datasets" if request.url.path.startswith("/datasets/") else "models"
        repo = ark.removeprefix("ark:")
        etag = f'"{(entry.sha256 or entry.xet_hash).hex()}"'
        headers = {
            "X-Repo-Commit": commit,
            "X-Linked-Etag": etag,
            "ETag": etag,
            "X-Linked-Size": str(entry.size),
            "X-Xet-Hash": hash_to_string(entry.xet_hash),
            "Link": f'<{base}/api/{kind}/{repo}/xet-read-token/{commit}>; rel="xet-auth"',
        }
        target = entry_ark(versioned(archive.ark, version), path)
        if request.method == "HEAD":
            return Response(headers=headers | {"Content-Length": str(entry.size)})
        return RedirectResponse(f"{base}/{target}", status_code=302, headers=headers)

    async def repo_info(self, request: Request) -> Response:
        ark, archive, versions = await self._archive(request)
        version = archive.version.version
        files = [e for e in archive.manifest.entries if e.kind is Kind.FILE]
        when = next((v.created for v in versions if v.version == version), 0.0)
        repo = ark.removeprefix("ark:")
        return JSONResponse(
            {
                "id": repo,
                "modelId": repo,
                "sha": commit_id(ark, version),
                "private": False,
                "lastModified": _iso(when),
                "tags": [],
                "siblings": [{"rfilename": e.path, "size": e.size} for e in files],
            }
        )

    async def tree(self, request: Request) -> Response:
        ark, archive, _ = await self._archive(request)
        path = request.path_params.get("path", "").strip("/")
        recursive = request.query_params.get("recursive", "").lower() in ("1", "true")
        manifest = archive.manifest
        folder = manifest.entry(path) if path else None
        if path and (folder is None or folder.kind is not Kind.DIR):
            raise _missing("EntryNotFound", f"no directory {path!r} in {ark}")
        prefix = f"{path}/" if path else ""
        if recursive:
            found = [e for e in manifest.entries if e.path.startswith(prefix)]
        else:
            found = manifest.children(path)
        return JSONResponse([_item(e) for e in found if e.kind is not Kind.SYMLINK])

    async def paths_info(self, request: Request) -> Response:
        _, archive, _ = await self._archive(request)
        body = await read_body(request, MAX_PATHS_INFO, "paths-info request")
        paths = _asked_paths(body, request.headers.get("content-type", ""))
        found = [archive.manifest.entry(p.strip("/")) for p in paths]
        return JSONResponse(
            [_item(e) for e in found if e is not None and e.kind is not Kind.SYMLINK]
        )

    async def refs(self, request: Request) -> Response:
        ark, _, versions = await self._archive(request)
        latest = versions[-1].version

        def ref(name: str, kind: str, version: int) -> dict[str, str]:
            return {
                "name": name,
                "ref": f"refs/{kind}/{name}",
                "targetCommit": commit_id(ark, version),
            }

        tags = [ref(v.name, "tags", v.version) for v in reversed(versions)]
        body = {"branches": [ref(MAIN, "heads", latest)], "converts": [], "tags": tags}
        return JSONResponse(body | {"pullRequests": []})

    async def commits(self, request: Request) -> Response:
        ark, archive, versions = await self._archive(request)
        upto = archive.version.version
        return JSONResponse([_commit(ark, v) for v in reversed(versions) if v.version <= upto])

    async def auth_check(self, request: Request) -> Response:
        await self._archive(request)
        return JSONResponse({})

    async def whoami(self, request: Request) -> Response:
        """Who the token is, as the Hub says it: a token has no user here, only a role."""
        scope = self.auth.granted(request.headers.get("authorization"))
        role = "write" if scope >= Scope.WRITE else "read"
        token = {"displayName": f"arkfs-{role}", "role": role}
        return JSONResponse(
            {
                "type": "user",
                "id": "arkfs",
                "name": "arkfs",
                "fullname": f"an arkfs {role} token",
                "orgs": [],
                "auth": {"type": "access_token", "accessToken": token},
            }
        )

    async def read_token(self, request: Request) -> Response:
        await self._archive(request)
        token = self.auth.require(request.headers.get("authorization"), Scope.READ, False)
        access, exp = self.auth.issuer.issue(
            self.auth.derived_scope(token, "read") if token else "read"
        )
        base = str(request.base_url).rstrip("/")
        headers = {
            "X-Xet-Cas-Url": base,
            "X-Xet-Access-Token": access,
            "X-Xet-Token-Expiration": str(exp),
            "Cache-Control": "no-store",
        }
        return JSONResponse({"accessToken": access, "exp": exp, "casUrl": base}, headers=headers)


def _asked_paths(body: bytes, content_type: str) -> list[str]:
    """The paths a paths-info request names: a form's `paths` fields (huggingface_hub's
    form), or a JSON object's `paths` list; 400 if the body is neither."""
    try:
        if "json" in content_type:
            asked = json.loads(body or b"{}").get("paths", [])
        else:
            asked = urllib.parse.parse_qs(body.decode(), strict_parsing=bool(body)).get("paths", [])
        if not isinstance(asked, list) or not all(isinstance(p, str) for p in asked):
            raise ValueError("paths is not a list of strings")
    except (ValueError, AttributeError) as exc:
        raise HttpError(400, f"a paths-info request names its paths in `paths`: {exc}") from None
    return asked


def _commit(ark: str, v: VersionInfo) -> dict[str, object]:
    """A version as the Hub lists a commit: its message's first line is the title (its
    name, v1, v2, ..., when it has no message)."""
    title, _, rest = (v.message.strip() or v.name).partition("\n")
    return {
        "id": commit_id(ark, v.version),
        "authors": [],
        "date": _iso(v.created),
        "title": title,
        "message": rest.strip(),
    }


def _iso(when: float) -> str:
    """A Unix time as the Hub writes one (ISO 8601, UTC)."""
    return datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _item(entry: Entry) -> dict[str, object]:
    """An entry as the Hub's tree and paths-info list one."""
    if entry.kind is Kind.DIR:
        oid = hashlib.sha1(entry.path.encode()).hexdigest()
        return {"type": "directory", "oid": oid, "path": entry.path}
    assert entry.xet_hash is not None
    sha = (entry.sha256 or entry.xet_hash).hex()
    return {
        "type": "file",
        "oid": hashlib.sha1(entry.xet_hash).hexdigest(),
        "size": entry.size,
        "path": entry.path,
        "xetHash": hash_to_string(entry.xet_hash),
        "lfs": {"oid": sha, "size": entry.size, "pointerSize": 134},
    }
