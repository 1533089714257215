"""The guards around a user's code: prints, exits, time limits and where an exception came from."""

from __future__ import annotations

import sys
import threading
import time

import pytest

from skilleval.sandbox.usercode import call_limited, raised_at, user_output


def test_only_the_thread_running_user_code_prints_to_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    inside, go_on = threading.Event(), threading.Event()

    def user() -> None:
        with user_output():
            print("from the plugin")
            inside.set()
            go_on.wait(5)

    worker = threading.Thread(target=user)
    worker.start()
    inside.wait(5)
    print("from skilleval")  # another thread, while the plugin's thread is inside
    go_on.set()
    worker.join(5)
    out, err = capsys.readouterr()
    assert out == "from skilleval\n"
    assert err == "from the plugin\n"


def test_sys_exit_is_returned_not_raised() -> None:
    called = call_limited(lambda: sys.exit(3), 5)
    assert isinstance(called.raised, SystemExit)
    assert called.raised.code == 3


def test_a_loop_is_stopped_at_the_limit() -> None:
    state = {"spins": 0}

    def spin() -> None:
        while True:
            state["spins"] += 1

    start = time.monotonic()
    called = call_limited(spin, 0.2)
    assert called.timed_out
    assert time.monotonic() - start < 3
    spins = state["spins"]
    time.sleep(0.2)
    assert state["spins"] == spins  # the loop really stopped, it was not just abandoned


def test_raised_at_names_the_preferred_file_and_line() -> None:
    def fails() -> None:
        raise ValueError("x")

    called = call_limited(fails, 5)
    assert called.raised is not None
    origin = raised_at(called.raised, fails.__code__.co_filename)
    assert origin is not None
    assert origin.line == fails.__code__.co_firstlineno + 1
    assert origin.path.endswith("test_usercode.py")
