"""Where runs are written: ``<home>/runs/<id>/`` with ``results.jsonl`` streamed as it goes."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import secrets
import time
from pathlib import Path
from typing import IO, Any

from skilleval.errors import SkillevalError
from skilleval.results.model import Run
from skilleval.results.records import Record
from skilleval.results.write import dumps_run, record_line, write_atomic


def home_dir() -> Path:
    """skilleval's working directory: ``$SKILLEVAL_HOME`` or ``.skilleval`` here."""
    return Path(os.environ.get("SKILLEVAL_HOME") or ".skilleval")


def new_run_id(suite_stem: str) -> str:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    slug = re.sub(r"[^a-z0-9]+", "-", suite_stem.lower()).strip("-")[:32] or "suite"
    return f"{stamp}-{slug}-{secrets.token_hex(2)}"


class RunDir:
    """One run's folder. Each finished record is appended and flushed at once."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)
        self._jsonl: IO[str] | None = None
        self._synced = 0.0

    @classmethod
    def create(cls, home: Path, suite_stem: str) -> RunDir:
        runs = home / "runs"
        runs.mkdir(parents=True, exist_ok=True)
        while True:
            root = runs / new_run_id(suite_stem)
            if not root.exists():
                return cls(root)

    @property
    def jsonl_path(self) -> Path:
        return self.root / "results.jsonl"

    @property
    def json_path(self) -> Path:
        return self.root / "results.json"

    def append(self, record: Record) -> None:
        if self._jsonl is None:
            self._jsonl = self.jsonl_path.open("a", encoding="utf-8")
        self._jsonl.write(record_line(record))
        # Flushed at once, so a killed process loses nothing (the kernel has the bytes);
        # synced to disk at most once a second, since an fsync per record dominates big runs.
        self._jsonl.flush()
        now = time.monotonic()
        if now - self._synced >= 1.0:
            os.fsync(self._jsonl.fileno())
            self._synced = now

    def close(self) -> None:
        if self._jsonl is not None:
            self._jsonl.flush()
            os.fsync(self._jsonl.fileno())
            self._jsonl.close()
            self._jsonl = None

    def write_results(self, run: Run) -> Path:
        """Write ``results.json`` atomically.

        Raises:
            SkillevalError: It could not be written (a full disk …); no temporary file is left,
                and ``results.jsonl`` still holds every record for ``--resume``.
        """
        try:
            write_atomic(self.json_path, dumps_run(run))
        except OSError as exc:
            raise SkillevalError(
                f"cannot write {self.json_path}: {exc.strerror or exc}; the results streamed to "
                f"{self.jsonl_path.name} are kept (`skilleval report {self.root}` reads them)"
            ) from None
        return self.json_path

    def write_json(self, name: str, data: Any) -> Path:
        """Write a JSON file atomically, so a reader never sees half of it."""
        target = self.root / name
        tmp = target.with_suffix(target.suffix + ".tmp")
        tmp.write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, target)
        return target

    def mark_latest(self) -> None:
        """Point ``runs/latest`` at this run (a relative symlink, replaced atomically)."""
        link = self.root.parent / "latest"
        tmp = self.root.parent / f".latest-{secrets.token_hex(4)}"
        try:
            tmp.symlink_to(self.root.name)
            os.replace(tmp, link)
        except OSError:
            tmp.unlink(missing_ok=True)
            (self.root.parent / "LATEST").write_text(self.root.name + "\n", encoding="utf-8")
