"""The local Hub server: repos with commits and branches, served by aiohttp in a thread.

Wire format mirrors what huggingface_hub 2.x reads (see its `hf_api.py` `model_info` /
`_iter_repo_tree_pages`, `file_download.py` `get_hf_file_metadata` / `http_get`, and
`utils/_http.py` `hf_raise_for_status` for the error headers).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import socket
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from aiohttp import web

from hubserver.repos import CHUNK, HubFile, HubRepo

_DATE = "2026-01-01T00:00:00.000Z"


@dataclass
class Request:
    method: str
    origin: str  # "hub" or "cdn"
    path: str
    range: str | None
    authorization: bool
    status: int = 0
    sent: int = 0
    file: str | None = None  # the repo file whose bytes were served


class HubServer:
    """Start with `with HubServer() as hub:`; `hub.endpoint` is the HF_ENDPOINT to use."""

    def __init__(self, host: str = "127.0.0.1", cdn_host: str = "127.0.0.2") -> None:
        self.host, self.cdn_host = host, cdn_host
        self.repos: dict[str, HubRepo] = {}
        self.datasets: dict[str, HubRepo] = {}
        self.log: list[Request] = []
        self._drops: dict[str, list[int]] = {}
        self._corrupt: dict[str, int] = {}  # path -> sends still to serve intact first
        self._whole: set[str] = set()
        self._pauses: dict[str, tuple[int, threading.Event]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self.port = self.cdn_port = 0

    # ----- set-up -------------------------------------------------------------------------
    def add_repo(
        self,
        repo_id: str,
        files: Mapping[str, bytes] | Iterable[HubFile],
        *,
        gated: bool | str = False,
        authorized: Iterable[str] = (),
        kind: str = "model",
    ) -> HubRepo:
        """A model repository, or with kind="dataset" a dataset repository (its own
        namespace: `/api/datasets/...`, `/datasets/...`)."""
        repo = HubRepo(repo_id, gated=gated, authorized=set(authorized), kind=kind)
        items = [HubFile(p, d) for p, d in files.items()] if isinstance(files, Mapping) else files
        repo.commit(items)
        (self.datasets if kind == "dataset" else self.repos)[repo_id] = repo
        return repo

    def add_dataset(
        self, repo_id: str, files: Mapping[str, bytes] | Iterable[HubFile], **options: Any
    ) -> HubRepo:
        return self.add_repo(repo_id, files, kind="dataset", **options)

    def drop_after(self, path: str, nbytes: int, times: int = 1) -> None:
        """The next `times` downloads of `path` lose the connection after `nbytes` bytes."""
        self._drops[path] = [nbytes] * times

    def corrupt(self, path: str, skip: int = 0) -> None:
        """Serve `path` with one byte flipped (same size: only a checksum can tell), from its
        `skip`+1-th download on."""
        self._corrupt[path] = skip

    def ignore_ranges(self, path: str) -> None:
        """Answer a Range request for `path` with the whole file (200), as some CDNs do."""
        self._whole.add(path)

    def pause_after(self, path: str, nbytes: int) -> threading.Event:
        """The next download of `path` stops after `nbytes` bytes until the event is set
        (it gives up waiting after 60 s)."""
        go = threading.Event()
        self._pauses[path] = (nbytes, go)
        return go

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def cdn(self) -> str:
        return f"http://{self.cdn_host}:{self.cdn_port}"

    def downloads(self, path: str | None = None) -> list[Request]:
        """GET requests that carried file bytes (resolve or CDN), optionally of one repo file."""
        return [
            r
            for r in self.log
            if r.method == "GET" and r.sent > 0 and r.file and (path is None or r.file == path)
        ]

    # ----- lifecycle ----------------------------------------------------------------------
    def start(self) -> HubServer:
        ready = threading.Event()
        hub_sock, cdn_sock = _listen(self.host), _listen(self.cdn_host)
        self.port, self.cdn_port = hub_sock.getsockname()[1], cdn_sock.getsockname()[1]

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            app = web.Application()
            app.router.add_route("*", "/{tail:.*}", self._dispatch)
            self._runner = web.AppRunner(app, access_log=None)
            loop.run_until_complete(self._runner.setup())
            for sock in (hub_sock, cdn_sock):
                loop.run_until_complete(web.SockSite(self._runner, sock).start())
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._runner.cleanup())
            loop.close()

        self._thread = threading.Thread(target=run, name="hubserver", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("hub server did not start")
        return self

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._loop = self._thread = None

    def __enter__(self) -> HubServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ----- HTTP ---------------------------------------------------------------------------
    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        origin = "cdn" if request.url.port == self.cdn_port else "hub"
        parts = [unquote(p) for p in request.raw_path.split("?")[0].split("/")[1:]]
        entry = Request(
            method=request.method,
            origin=origin,
            path="/".join(parts),
            range=request.headers.get("Range"),
            authorization="Authorization" in request.headers,
        )
        self.log.append(entry)
        try:
            response = await self._route(request, origin, parts, entry)
        except web.HTTPException as err:
            response = web.Response(status=err.status, headers=err.headers, body=err.body)
        entry.status = response.status
        return response

    async def _route(
        self, request: web.Request, origin: str, parts: list[str], entry: Request
    ) -> web.StreamResponse:
        if origin == "cdn":
            if len(parts) == 2 and parts[0] == "cdn":
                return await self._serve_blob(request, parts[1], entry)
            raise web.HTTPNotFound()
        kinds = {"models": self.repos, "datasets": self.datasets}
        if parts[0] == "datasets" and len(parts) >= 6 and parts[3] == "resolve":
            repo = self._repo("/".join(parts[1:3]), self.datasets)
            return await self._resolve(request, repo, parts[4], "/".join(parts[5:]), entry)
        if parts[0] == "api" and len(parts) >= 4 and parts[1] in kinds:
            repo = self._repo("/".join(parts[2:4]), kinds[parts[1]])
            rest = parts[4:]
            if not rest:
                return self._info(request, repo, "main")
            if rest[0] == "revision" and len(rest) == 2:
                return self._info(request, repo, rest[1])
            if rest[0] == "tree" and len(rest) >= 2:
                return self._tree(request, repo, rest[1], "/".join(rest[2:]))
        if len(parts) >= 5 and parts[2] == "resolve":
            repo = self._repo("/".join(parts[:2]))
            return await self._resolve(request, repo, parts[3], "/".join(parts[4:]), entry)
        raise web.HTTPNotFound()

    def _repo(self, repo_id: str, repos: dict[str, HubRepo] | None = None) -> HubRepo:
        repo = (self.repos if repos is None else repos).get(repo_id)
        if repo is None:
            raise _error(401, "RepoNotFound", "Repository not found")
        return repo

    def _commit(self, repo: HubRepo, revision: str) -> str:
        sha = repo.resolve(revision)
        if sha is None:
            raise _error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
        return sha

    def _info(self, request: web.Request, repo: HubRepo, revision: str) -> web.Response:
        sha = self._commit(repo, revision)
        blobs = request.query.get("blobs", "").lower() == "true"
        siblings = []
        for f in sorted(repo.commits[sha].values(), key=lambda f: f.path):
            sib: dict[str, Any] = {"rfilename": f.path}
            if blobs:
                sib.update(size=f.size, blobId=f.oid)
                if f.lfs:
                    sib["lfs"] = {"sha256": f.sha256, "size": f.size, "pointerSize": 134}
            siblings.append(sib)
        body = {
            "_id": hashlib.md5(repo.repo_id.encode()).hexdigest()[:24],
            "id": repo.repo_id,
            **({"modelId": repo.repo_id} if repo.kind == "model" else {}),
            "author": repo.repo_id.split("/")[0],
            "sha": sha,
            "lastModified": _DATE,
            "createdAt": _DATE,
            "private": False,
            "gated": repo.gated,
            "disabled": False,
            "downloads": 0,
            "likes": 0,
            "tags": [],
            **({"library_name": "transformers"} if repo.kind == "model" else {}),
            "siblings": siblings,
        }
        return web.json_response(body)

    def _tree(self, request: web.Request, repo: HubRepo, revision: str, sub: str) -> web.Response:
        sha = self._commit(repo, revision)
        recursive = request.query.get("recursive", "").lower() == "true"
        prefix = f"{sub}/" if sub else ""
        entries: dict[str, dict[str, Any]] = {}
        for f in repo.commits[sha].values():
            if not f.path.startswith(prefix):
                continue
            rel = f.path[len(prefix) :].split("/")
            for depth in range(1, len(rel)):
                folder = prefix + "/".join(rel[:depth])
                entries.setdefault(folder, {"type": "directory", "oid": "0" * 40, "path": folder})
                if not recursive:
                    break
            if len(rel) > 1 and not recursive:
                continue
            item: dict[str, Any] = {"type": "file", "oid": f.oid, "size": f.size, "path": f.path}
            if f.lfs:
                item["lfs"] = {"oid": f.sha256, "size": f.size, "pointerSize": 134}
            entries[f.path] = item
        return web.json_response([entries[k] for k in sorted(entries)])

    async def _resolve(
        self, request: web.Request, repo: HubRepo, revision: str, path: str, entry: Request
    ) -> web.StreamResponse:
        sha = self._commit(repo, revision)
        if repo.gated:
            self._check_access(request, repo)
        f = repo.commits[sha].get(path)
        if f is None:
            raise _error(
                404, "EntryNotFound", f"{path} does not exist on {revision}", {"X-Repo-Commit": sha}
            )
        headers = {"X-Repo-Commit": sha, "ETag": f'"{f.oid}"', "Accept-Ranges": "bytes"}
        if f.lfs:
            headers.update(
                {
                    "Location": f"{self.cdn}/cdn/{f.sha256}",
                    "X-Linked-Etag": f'"{f.sha256}"',
                    "X-Linked-Size": str(f.size),
                }
            )
            return web.Response(status=302, headers=headers)
        return await self._send(request, f, headers, entry)

    def _check_access(self, request: web.Request, repo: HubRepo) -> None:
        auth = request.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ").strip()
        if token and token in repo.authorized:
            return
        prefix = "datasets/" if repo.kind == "dataset" else ""
        if not token:
            raise _error(
                401,
                "GatedRepo",
                f"Access to {repo.kind} {repo.repo_id} is restricted. You must have access to "
                "it and be authenticated to access it. Please log in.",
            )
        raise _error(
            403,
            "GatedRepo",
            f"Access to {repo.kind} {repo.repo_id} is restricted and you are not in the "
            f"authorized list. Visit https://huggingface.co/{prefix}{repo.repo_id} to ask for "
            "access.",
        )

    async def _serve_blob(
        self, request: web.Request, sha256: str, entry: Request
    ) -> web.StreamResponse:
        for repo in [*self.repos.values(), *self.datasets.values()]:
            for tree in repo.commits.values():
                for f in tree.values():
                    if f.sha256 == sha256:
                        return await self._send(request, f, {"ETag": f'"{sha256}"'}, entry)
        raise web.HTTPNotFound()

    async def _send(
        self, request: web.Request, f: HubFile, headers: dict[str, str], entry: Request
    ) -> web.StreamResponse:
        start, end, status = 0, f.size, 200
        entry.file = f.path
        rng = request.headers.get("Range")
        if rng and rng.startswith("bytes=") and f.path not in self._whole:
            first, _, last = rng[len("bytes=") :].partition("-")
            start = int(first or 0)
            end = int(last) + 1 if last else f.size
            if start >= f.size:
                raise web.HTTPRequestRangeNotSatisfiable(
                    headers={"Content-Range": f"bytes */{f.size}"}
                )
            status = 206
            headers["Content-Range"] = f"bytes {start}-{end - 1}/{f.size}"
        if request.method == "HEAD":
            return web.Response(
                status=status, headers={**headers, "Content-Length": str(end - start)}
            )
        special = self._drops or self._corrupt or self._pauses
        if f.source is not None and not special:
            resp: web.StreamResponse = web.FileResponse(f.source, headers=headers)
            entry.sent = end - start
            return resp
        resp = web.StreamResponse(status=status, headers=headers)
        resp.content_length = end - start
        await resp.prepare(request)
        drops = self._drops.get(f.path)
        limit = start + drops.pop(0) if drops else None
        pause = self._pauses.pop(f.path, None) if request.method == "GET" else None
        corrupt = self._corrupt.get(f.path) == 0
        if f.path in self._corrupt and not corrupt:
            self._corrupt[f.path] -= 1
        pos = start
        while pos < end:
            stop = min(end, pos + CHUNK, limit if limit is not None and limit > pos else end)
            if pause is not None and pos >= start + pause[0]:
                await asyncio.get_running_loop().run_in_executor(None, pause[1].wait, 60)
                pause = None
            chunk = f.read(pos, stop)
            if corrupt and pos <= f.size // 2 < stop:
                i = f.size // 2 - pos
                chunk = chunk[:i] + bytes([chunk[i] ^ 0xFF]) + chunk[i + 1 :]
            # counted before the write returns: a client may have the whole body (and the
            # test its result) before this coroutine runs again
            entry.sent = stop - start
            await resp.write(chunk)
            pos = stop
            if limit is not None and pos >= limit:
                assert request.transport is not None
                request.transport.close()  # the peer sees a short body
                return resp
        await resp.write_eof()
        return resp


def _error(
    status: int, code: str, message: str, extra: Mapping[str, str] | None = None
) -> web.HTTPException:
    headers = {"X-Error-Code": code, "X-Error-Message": message, **(extra or {})}
    body = json.dumps({"error": message})
    cls = {401: web.HTTPUnauthorized, 403: web.HTTPForbidden, 404: web.HTTPNotFound}[status]
    return cls(headers=headers, text=body, content_type="application/json")


def _listen(host: str) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    sock.listen(128)
    sock.setblocking(False)
    return sock
