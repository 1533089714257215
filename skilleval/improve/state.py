"""The loop's state in the output folder, so a killed ``improve`` picks up where it stopped.

``OUT/improve-state.json`` holds every finished step: each skill's evaluation (by the
SHA-256 of its SKILL.md), each proposal, each overfitting check, and the planned requests
they cost. It is rewritten atomically after every step and sealed as everything skilleval
reads back is (``util/homefile.py``: a SHA-256 of the bytes, checked before parsing). A
state that fails its check is not used, with one warning, and the work is done again. A
state written for other inputs (another suite, other candidates, seed or settings: the
fingerprint inside it says) is set aside with a note, never mixed in.

What is restored is exactly what an uninterrupted run would have computed, planned request
counts included, so a resumed run writes the same report byte for byte.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from skilleval.util.homefile import read_sealed, write_sealed

STATE_FILE = "improve-state.json"
STATE_VERSION = 1


def fingerprint(parts: Iterable[tuple[str, str | bytes]]) -> str:
    """A SHA-256 over named inputs, in the order given."""
    h = hashlib.sha256()
    for name, value in parts:
        data = value if isinstance(value, bytes) else value.encode("utf-8", "surrogatepass")
        h.update(name.encode() + b"\0" + len(data).to_bytes(8, "big") + data)
    return h.hexdigest()


def files_digest(paths: Iterable[Path], base: Path) -> str:
    """A SHA-256 over files, each named relative to ``base``."""
    h = hashlib.sha256()
    for path in sorted(paths):
        name = path.relative_to(base).as_posix() if path.is_relative_to(base) else path.name
        data = path.read_bytes()
        h.update(name.encode() + b"\0" + len(data).to_bytes(8, "big") + data)
    return h.hexdigest()


class State:
    """Finished steps by key, written through to the sealed file after each one."""

    def __init__(
        self, folder: Path, inputs: str, notice: Callable[[str], None] | None = None
    ) -> None:
        self.path = folder / STATE_FILE
        self.inputs = inputs
        self.steps: dict[str, Any] = {}
        self.resumed = 0
        payload = read_sealed(self.path, "an improve state", remove=False)
        if payload is None:
            return
        try:
            data = json.loads(payload)
        except (ValueError, RecursionError):
            return
        if (
            not isinstance(data, dict)
            or data.get("version") != STATE_VERSION
            or not isinstance(data.get("steps"), dict)
        ):
            return
        if data.get("inputs") != inputs:
            if notice is not None:
                notice(f"{self.path}: the state is for other inputs; starting over")
            return
        self.steps = data["steps"]

    def get(self, key: str) -> Any:
        found = self.steps.get(key)
        if found is not None:
            self.resumed += 1
        return found

    def put(self, key: str, value: Any) -> None:
        self.steps[key] = value
        body = {"version": STATE_VERSION, "inputs": self.inputs, "steps": self.steps}
        payload = json.dumps(body, sort_keys=True, ensure_ascii=False).encode("utf-8")
        write_sealed(self.path, payload)
