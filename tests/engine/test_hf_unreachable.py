"""A hub that cannot be reached is found at once (engine/hf.py ``_unreachable``): a file not
in the cache fails in one line without huggingface_hub's 23 s of retries, and a cached one is
used without them."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

from tests.engine.fakehub import FakeHub, Repo
from tests.engine.test_hf import REPO, hub_env, run_failure

FETCH = (
    "from skilleval.engine.hf import fetch; from skilleval.engine.hf_ref import parse_ref; "
    "import sys; "
    "print(fetch(parse_ref(sys.argv[1])).path)"
)


def closed_endpoint() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def test_a_file_reference_with_no_hub_fails_in_one_line_at_once(tmp_path: Path) -> None:
    started = time.monotonic()
    model = f"hf:{REPO}/Tiny-Q4_K_M.gguf"
    line = run_failure(tmp_path, closed_endpoint(), model)  # type: ignore[arg-type]
    assert time.monotonic() - started < 10  # was 23 s of retries
    assert "cannot reach http://127.0.0.1:" in line
    assert "and it is not in the local cache (" in line


def test_a_cached_file_is_used_when_the_hub_is_gone(tmp_path: Path) -> None:
    tiny_gguf = tmp_path / "tiny.gguf"
    tiny_gguf.write_bytes(b"GGUF" + bytes(range(256)) * 8)
    ref = f"hf:{REPO}/Tiny-Q4_K_M.gguf"
    with FakeHub({REPO: Repo({"Tiny-Q4_K_M.gguf": tiny_gguf})}) as served:
        env = hub_env(tmp_path, served.url)
        first = subprocess.run(
            [sys.executable, "-c", FETCH, ref], capture_output=True, text=True, env=env
        )
    assert first.returncode == 0, first.stderr
    started = time.monotonic()
    again = subprocess.run(
        [sys.executable, "-c", FETCH, ref], capture_output=True, text=True, env=env
    )
    assert again.returncode == 0, again.stderr
    assert again.stdout == first.stdout
    assert time.monotonic() - started < 10


def test_a_damaged_download_in_the_cache_is_fetched_again_with_one_warning(
    tmp_path: Path,
) -> None:
    tiny_gguf = tmp_path / "tiny.gguf"
    tiny_gguf.write_bytes(b"GGUF" + bytes(range(256)) * 8)
    ref = f"hf:{REPO}/Tiny-Q4_K_M.gguf"
    with FakeHub({REPO: Repo({"Tiny-Q4_K_M.gguf": tiny_gguf})}) as served:
        env = hub_env(tmp_path, served.url)
        first = subprocess.run(
            [sys.executable, "-c", FETCH, ref], capture_output=True, text=True, env=env
        )
        assert first.returncode == 0, first.stderr
        blob = Path(first.stdout.strip()).resolve()
        data = bytearray(blob.read_bytes())
        data[100] ^= 1
        blob.chmod(0o644)
        blob.write_bytes(bytes(data))
        again = subprocess.run(
            [sys.executable, "-c", FETCH, ref], capture_output=True, text=True, env=env
        )
    assert again.returncode == 0, again.stderr
    assert again.stderr.count("warning: a downloaded model in") == 1, again.stderr
    assert "is damaged and was not used; it is downloaded again" in again.stderr
    assert Path(again.stdout.strip()).read_bytes() == tiny_gguf.read_bytes()
