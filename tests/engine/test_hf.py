"""``hf:`` models: references, picking a file by quantisation, and fetching from a hub.

Every fetch goes to a hub served on 127.0.0.1 by this test (``fakehub``), with HF_ENDPOINT
pointing at it and HF_HOME in a temporary folder, so nothing leaves the machine. The command
runs in a child process, because huggingface_hub reads those variables when it is imported.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import pty
import struct
import subprocess
import sys
import termios
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakehub import COMMIT, FakeHub, Repo

from skilleval.engine.embedded import default_model_path
from skilleval.engine.hf_ref import parse_ref, pick_quant

ROOT = Path(__file__).resolve().parents[2]
REPO = "acme/Tiny-GGUF"

SUITE = """
version: 1
model: {model}
decoding: {{max_tokens: 8, seed: 3}}
prompts: ["Answer briefly. {{{{q}}}}"]
tests:
  - id: capital
    vars: {{q: "What is the capital of France?"}}
    assert: [{{type: icontains, value: paris}}]
"""


# -- references and quantisation tags -----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "repo", "filename", "quant", "revision"),
    [
        ("hf:a/b/m.Q4_K_M.gguf", "a/b", "m.Q4_K_M.gguf", None, None),
        ("hf:a/b/sub/dir/m.GGUF", "a/b", "sub/dir/m.GGUF", None, None),
        ("hf:a/b:q4_k_m", "a/b", None, "q4_k_m", None),
        ("hf:a-1/b.c_d/m.gguf@v1.0", "a-1/b.c_d", "m.gguf", None, "v1.0"),
        ("hf:a/b:Q8_0@" + COMMIT, "a/b", None, "Q8_0", COMMIT),
    ],
)
def test_a_reference_names_a_repo_and_a_file_or_a_quantisation(
    text: str, repo: str, filename: str | None, quant: str | None, revision: str | None
) -> None:
    ref = parse_ref(text)
    assert (ref.repo, ref.filename, ref.quant, ref.revision) == (repo, filename, quant, revision)
    assert str(ref) == text


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("hf:a/b", "names no file"),
        ("hf:a", "'a' is not OWNER/REPO"),
        ("hf:-a/b/m.gguf", "'-a/b' is not OWNER/REPO"),
        ("hf:a/b/m.bin", "'m.bin' is not a .gguf file"),
        ("hf:a/b/../m.gguf", "not a file path inside the repository"),
        ("hf:a/b:Q4-K", "'Q4-K' is not a quantisation tag"),
        ("hf:a/b/m.gguf:Q4_0", "name the file or the quantisation, not both"),
        ("hf:a/b/m.gguf@", "an empty or blank revision"),
    ],
)
def test_a_malformed_reference_says_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=r"hf:OWNER/REPO/FILE\.gguf") as caught:
        parse_ref(text)
    assert says in str(caught.value)


FILES = [
    "README.md",
    "Tiny-Q4_K_M.gguf",
    "Tiny-Q4_K_S.gguf",
    "Tiny-Q8_0.gguf",
    "mmproj-Tiny-F16.gguf",
    "Tiny-F16.gguf",
    "big/Tiny-Q6_K-00002-of-00002.gguf",
    "big/Tiny-Q6_K-00001-of-00002.gguf",
]


@pytest.mark.parametrize(
    ("quant", "picked"),
    [
        ("Q4_K_M", ["Tiny-Q4_K_M.gguf"]),
        ("q8_0", ["Tiny-Q8_0.gguf"]),
        ("F16", ["Tiny-F16.gguf"]),  # never the multimodal projector
        ("Q6_K", ["big/Tiny-Q6_K-00001-of-00002.gguf", "big/Tiny-Q6_K-00002-of-00002.gguf"]),
    ],
)
def test_a_quantisation_tag_picks_one_model(quant: str, picked: list[str]) -> None:
    assert pick_quant(FILES, quant) == picked


def test_a_tag_that_matches_nothing_lists_the_files_there_are() -> None:
    with pytest.raises(ValueError, match=r"no \.gguf file matches Q4_K") as caught:
        pick_quant(FILES, "Q4_K")  # a whole part of the name, so not Q4_K_M or Q4_K_S
    assert "Tiny-Q4_K_M.gguf, Tiny-Q4_K_S.gguf" in str(caught.value)
    assert "README.md" not in str(caught.value)


def test_a_tag_that_matches_two_models_is_ambiguous() -> None:
    with pytest.raises(ValueError, match="Tiny matches 5 models") as caught:
        pick_quant(FILES, "Tiny")
    assert "name the file: hf:OWNER/REPO/FILE.gguf" in str(caught.value)


# -- fetching from a hub on 127.0.0.1 ---------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small file that starts like a GGUF: enough for fetching, not for loading."""
    path = tmp_path_factory.mktemp("files") / "tiny.gguf"
    path.write_bytes(b"GGUF" + bytes(range(256)) * 8)
    return path


@pytest.fixture
def hub(tiny_gguf: Path) -> Iterator[FakeHub]:
    files = {
        "Tiny-Q4_K_M.gguf": tiny_gguf,
        "Tiny-Q8_0.gguf": tiny_gguf,
        "real/SmolLM2-135M-Instruct.Q4_1.gguf": default_model_path(),
    }
    with FakeHub({REPO: Repo(files)}) as served:
        yield served


def hub_env(home: Path, endpoint: str, **env: str) -> dict[str, str]:
    """This environment with huggingface_hub's settings replaced: the hub on 127.0.0.1, a
    cache under ``home``, and nothing of the user's (a token, offline mode, another cache)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING"))}
    return {
        **clean,
        "PYTHONPATH": str(ROOT),
        "SKILLEVAL_HOME": str(home / "skilleval"),
        "HF_HOME": str(home / "hf"),
        "HF_ENDPOINT": endpoint,
        **env,
    }


def skilleval(
    args: list[str], home: Path, hub: FakeHub | str, **env: str
) -> subprocess.CompletedProcess[str]:
    full = hub_env(home, hub if isinstance(hub, str) else hub.url, **env)
    return subprocess.run(
        [sys.executable, "-m", "skilleval", *args],
        capture_output=True,
        text=True,
        env=full,
        check=False,
        timeout=600,
    )


def suite(tmp_path: Path, model: str) -> Path:
    path = tmp_path / "suite.yaml"
    path.write_text(textwrap.dedent(SUITE.format(model=model)).lstrip(), encoding="utf-8")
    return path


def test_a_split_model_is_fetched_whole_and_run_from_its_first_shard(
    tmp_path: Path, tiny_gguf: Path
) -> None:
    shards = {f"big/Tiny-Q6_K-0000{i}-of-00003.gguf": tiny_gguf for i in (1, 2, 3)}
    code = (
        "from skilleval.engine.hf import fetch; from skilleval.engine.hf_ref import parse_ref; "
        "import sys; "
        "print(fetch(parse_ref(sys.argv[1])).path)"
    )
    with FakeHub({REPO: Repo(shards)}) as served:
        # Naming any one shard brings all three, and the model runs from the first.
        done = subprocess.run(
            [sys.executable, "-c", code, f"hf:{REPO}/big/Tiny-Q6_K-00002-of-00003.gguf"],
            capture_output=True,
            text=True,
            env=hub_env(tmp_path, served.url),
            check=False,
        )
    assert done.returncode == 0, done.stderr
    first = Path(done.stdout.strip())
    assert first.name == "Tiny-Q6_K-00001-of-00003.gguf"
    assert sorted(p.name for p in first.parent.iterdir()) == sorted(Path(s).name for s in shards)


def test_validate_reads_an_hf_model_without_fetching_it(tmp_path: Path, hub: FakeHub) -> None:
    done = skilleval(["validate", str(suite(tmp_path, f"hf:{REPO}:Q4_K_M"))], tmp_path, hub)
    assert done.returncode == 0, done.stderr
    assert hub.requests == []


def run_failure(tmp_path: Path, hub: FakeHub, model: str, **env: str) -> str:
    """Run a suite whose model cannot be fetched; return its one line of stderr."""
    done = skilleval(["run", str(suite(tmp_path, model)), "--no-cache"], tmp_path, hub, **env)
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"error: {tmp_path / 'suite.yaml'}:2:1: cannot fetch {model}: ")
    return lines[0]


def test_a_missing_file_is_one_line_naming_the_repo_and_file(tmp_path: Path, hub: FakeHub) -> None:
    line = run_failure(tmp_path, hub, f"hf:{REPO}/Tiny-Q2_K.gguf")
    assert line.endswith(f"{REPO} has no file Tiny-Q2_K.gguf")


def test_a_missing_repo_is_one_line_naming_it(tmp_path: Path, hub: FakeHub) -> None:
    line = run_failure(tmp_path, hub, "hf:acme/Nothing-GGUF/m.gguf")
    assert line.endswith(
        f"no repository acme/Nothing-GGUF on {hub.url} (or it is private: set HF_TOKEN)"
    )


def test_a_missing_revision_is_one_line(tmp_path: Path, hub: FakeHub) -> None:
    line = run_failure(tmp_path, hub, f"hf:{REPO}:Q8_0@v9")
    assert line.endswith(f"{REPO} has no revision v9")


def test_a_quantisation_that_is_not_there_lists_what_is(tmp_path: Path, hub: FakeHub) -> None:
    line = run_failure(tmp_path, hub, f"hf:{REPO}:Q5_K_M")
    assert line.endswith(
        f"in {REPO}, no .gguf file matches Q5_K_M; its .gguf files are "
        "Tiny-Q4_K_M.gguf, Tiny-Q8_0.gguf, real/SmolLM2-135M-Instruct.Q4_1.gguf"
    )


def test_an_ambiguous_quantisation_is_one_line(tmp_path: Path, hub: FakeHub) -> None:
    line = run_failure(tmp_path, hub, f"hf:{REPO}:Tiny")
    assert "Tiny matches 2 models (Tiny-Q4_K_M.gguf, Tiny-Q8_0.gguf)" in line


@pytest.mark.slow
def test_a_failing_hub_is_one_line_with_its_status(tmp_path: Path, hub: FakeHub) -> None:
    hub.failing = True  # huggingface_hub retries 5 times, 1 s apart (Retry-After: 0)
    line = run_failure(tmp_path, hub, f"hf:{REPO}/Tiny-Q8_0.gguf")
    assert line.endswith(
        f"{hub.url} answered HTTP 500 Internal Server Error for Tiny-Q8_0.gguf from {REPO}, "
        "and it is not in the local cache"
    )


def test_offline_and_not_cached_is_one_line(tmp_path: Path, hub: FakeHub) -> None:
    line = run_failure(tmp_path, hub, f"hf:{REPO}/Tiny-Q8_0.gguf", HF_HUB_OFFLINE="1")
    assert line.endswith(
        f"Tiny-Q8_0.gguf from {REPO} is not in the local cache, and HF_HUB_OFFLINE is set"
    )
    assert hub.requests == []


def test_a_bad_reference_is_a_load_error_at_its_position(tmp_path: Path, hub: FakeHub) -> None:
    done = skilleval(["run", str(suite(tmp_path, f"hf:{REPO}/m.bin"))], tmp_path, hub)
    assert done.returncode == 4, done.stderr
    assert done.stderr.startswith(f"{tmp_path / 'suite.yaml'}:2:8: error: 'hf:{REPO}/m.bin'")
    assert hub.requests == []


# -- a whole run, then the same run offline ------------------------------------------------------


def run_json(tmp_path: Path, hub: FakeHub | str, model: str, **env: str) -> dict:
    done = skilleval(
        ["run", str(suite(tmp_path, model)), "--no-cache", "--json"], tmp_path, hub, **env
    )
    assert done.returncode in (0, 1), done.stderr
    # Nothing but the verdict line on a pipe: no progress bar, no log lines from the download.
    assert "%|" not in done.stderr, done.stderr
    assert "Retry" not in done.stderr, done.stderr
    doc: dict = json.loads(done.stdout)
    return doc


@pytest.mark.model
def test_an_hf_model_downloads_runs_then_runs_offline_from_the_cache(
    tmp_path: Path, hub: FakeHub
) -> None:
    model = f"hf:{REPO}:Q4_1"
    first = run_json(tmp_path, hub, model)
    identity = first["environment"]["model"]
    embedded = default_model_path()
    assert identity["name"] == embedded.name
    assert identity["size"] == embedded.stat().st_size
    with embedded.open("rb") as fh:
        assert identity["sha256"] == hashlib.file_digest(fh, "sha256").hexdigest()
    assert identity["details"] == {
        "source": "hf",
        "repo": REPO,
        "filename": "real/SmolLM2-135M-Instruct.Q4_1.gguf",
        "revision": COMMIT,
        "endpoint": hub.url,
    }
    assert f"models--acme--Tiny-GGUF/snapshots/{COMMIT}/real/" in identity["file"]
    assert first["records"][0]["output"]
    assert f"GET /{REPO}/resolve/main/real/SmolLM2-135M-Instruct.Q4_1.gguf" in hub.requests

    hub.stop()
    offline = run_json(tmp_path, hub, model, HF_HUB_OFFLINE="1")
    assert offline["environment"]["model"] == identity
    assert [r["output"] for r in offline["records"]] == [r["output"] for r in first["records"]]


def on_a_terminal(args: list[str], env: dict[str, str]) -> str:
    """Run skilleval with stderr on a pseudo-terminal 100 columns wide; return what it drew."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "skilleval", *args],
        stdout=subprocess.DEVNULL,
        stderr=follower,
        env=env,
    )
    os.close(follower)
    drawn = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        drawn += chunk
    proc.wait(timeout=600)
    os.close(leader)
    return drawn.decode("utf-8", errors="replace")


@pytest.mark.parametrize("quiet", [False, True])
def test_a_terminal_shows_the_download(tmp_path: Path, hub: FakeHub, quiet: bool) -> None:
    """With the run's own bar on the terminal, the download is whole lines above it; with
    --quiet, huggingface_hub's own bar. (On a pipe nothing is drawn: see run_failure.)"""
    args = ["run", str(suite(tmp_path, f"hf:{REPO}/Tiny-Q8_0.gguf")), "--no-cache"]
    drawn = on_a_terminal([*args, *(["-q"] if quiet else [])], hub_env(tmp_path, hub.url))
    assert "Tiny-Q8_0.gguf:   0%" in drawn
    assert ("testing" in drawn) is not quiet
