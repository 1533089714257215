"""A Hugging Face hub on 127.0.0.1: just enough of its file API for huggingface_hub.

It answers what ``hf_hub_download`` and ``HfApi.model_info`` ask:

* ``GET /api/models/OWNER/REPO[/revision/REV]``: the repository's commit and file list;
* ``HEAD`` and ``GET /OWNER/REPO/resolve/REV/FILE``: the file, with the headers
  huggingface_hub reads (``X-Repo-Commit``, ``ETag``, ``Content-Length``);
* errors as the hub gives them: 404 with ``X-Error-Code`` ``RepoNotFound``,
  ``RevisionNotFound`` or ``EntryNotFound``.

``failing = True`` makes every request a 500 (with ``Retry-After: 0``, so huggingface_hub's
retries wait 1 s each instead of up to 8).
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

COMMIT = "0123456789abcdef0123456789abcdef01234567"
"""The one commit every repository is at; ``main`` resolves to it."""

_CHUNK = 1 << 20


@dataclass
class Repo:
    files: dict[str, Path]
    """File name in the repository → the local file served for it."""
    _digests: dict[str, str] = field(default_factory=dict)

    def sha256(self, name: str) -> str:
        if name not in self._digests:
            with self.files[name].open("rb") as fh:
                self._digests[name] = hashlib.file_digest(fh, "sha256").hexdigest()
        return self._digests[name]


class FakeHub:
    """A threaded hub server; ``url`` is what HF_ENDPOINT is set to."""

    def __init__(self, repos: dict[str, Repo]) -> None:
        self.repos = repos
        self.failing = False
        self.requests: list[str] = []
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                hub._answer(self, body=True)

            def do_HEAD(self) -> None:
                hub._answer(self, body=False)

            def log_message(self, format: str, *args: object) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> FakeHub:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop answering: from now on a connection is refused."""
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join()
        self._server.server_close()

    # -- the API -------------------------------------------------------------------------------

    def _answer(self, req: BaseHTTPRequestHandler, *, body: bool) -> None:
        path = unquote(urlsplit(req.path).path)
        self.requests.append(f"{req.command} {path}")
        if self.failing:
            self._error(req, 500, None, extra={"Retry-After": "0"})
            return
        parts = path.strip("/").split("/")
        if parts[:2] == ["api", "models"] and len(parts) >= 4:
            self._info(req, "/".join(parts[2:4]), parts[4:], body)
        elif len(parts) >= 5 and parts[2] == "resolve":
            self._file(req, "/".join(parts[:2]), parts[3], "/".join(parts[4:]), body)
        else:
            self._error(req, 404, None)

    def _info(self, req: BaseHTTPRequestHandler, name: str, rest: list[str], body: bool) -> None:
        repo = self.repos.get(name)
        if repo is None:
            self._error(req, 404, "RepoNotFound")
            return
        if rest and (rest[0] != "revision" or rest[1:] not in (["main"], [COMMIT])):
            self._error(req, 404, "RevisionNotFound")
            return
        payload = {
            "id": name,
            "sha": COMMIT,
            "siblings": [{"rfilename": f} for f in sorted(repo.files)],
        }
        data = json.dumps(payload).encode()
        self._send(
            req, 200, {"Content-Type": "application/json"}, data if body else None, len(data)
        )

    def _file(
        self, req: BaseHTTPRequestHandler, name: str, rev: str, filename: str, body: bool
    ) -> None:
        repo = self.repos.get(name)
        if repo is None:
            self._error(req, 404, "RepoNotFound")
            return
        if rev not in ("main", COMMIT):
            self._error(req, 404, "RevisionNotFound")
            return
        local = repo.files.get(filename)
        if local is None:
            self._error(req, 404, "EntryNotFound", extra={"X-Repo-Commit": COMMIT})
            return
        size = local.stat().st_size
        headers = {
            "Content-Type": "application/octet-stream",
            "X-Repo-Commit": COMMIT,
            "ETag": f'"{repo.sha256(filename)}"',
        }
        self._send(req, 200, headers, local if body else None, size)

    def _error(
        self,
        req: BaseHTTPRequestHandler,
        status: int,
        code: str | None,
        extra: dict[str, str] | None = None,
    ) -> None:
        headers = {"Content-Type": "application/json", **(extra or {})}
        if code is not None:
            headers["X-Error-Code"] = code
        data = json.dumps({"error": code or "error"}).encode()
        self._send(req, status, headers, data if req.command == "GET" else None, len(data))

    def _send(
        self,
        req: BaseHTTPRequestHandler,
        status: int,
        headers: dict[str, str],
        body: bytes | Path | None,
        length: int,
    ) -> None:
        req.send_response(status)
        for key, value in headers.items():
            req.send_header(key, value)
        req.send_header("Content-Length", str(length))
        req.end_headers()
        if isinstance(body, bytes):
            req.wfile.write(body)
        elif isinstance(body, Path):
            with body.open("rb") as fh:
                while chunk := fh.read(_CHUNK):
                    req.wfile.write(chunk)
