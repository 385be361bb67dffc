"""Bounded exit of the CLI verbs: each waits under ``so101_cli.common.interrupt_event``; after Ctrl-C its cleanup
(a node's shutdown, a bag's close) is bounded by the deadline, and a second signal ends it at once. A verb whose
cleanup never returns stands in for one that hangs (a real process, real signals)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

HANGING_VERB = """
import threading
from so101_cli.common import interrupt_event

with interrupt_event() as stop:
    print("waiting", flush=True)
    stop.wait()

def clean_up():
    print("cleaning up", flush=True)
    threading.Event().wait()  # never returns

clean_up()
"""


def start(deadline_s: float) -> subprocess.Popen[str]:
    env = {**os.environ, "SO101_SHUTDOWN_DEADLINE_S": str(deadline_s), "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen([sys.executable, "-c", HANGING_VERB], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=env)  # fmt: skip
    assert process.stdout is not None and process.stdout.readline().strip() == "waiting"
    return process


def finish(process: subprocess.Popen[str]) -> tuple[int, str]:
    try:
        _out, err = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        raise AssertionError("the verb did not end") from None
    return process.returncode, err


def test_a_verb_whose_cleanup_hangs_ends_at_the_deadline() -> None:
    process = start(deadline_s=2.0)
    process.send_signal(signal.SIGINT)
    code, err = finish(process)
    assert code == 1 and "Timeout (0:00:02)!" in err and "in clean_up" in err


def test_a_second_ctrl_c_ends_a_hanging_verb_at_once() -> None:
    process = start(deadline_s=3600.0)
    process.send_signal(signal.SIGINT)
    assert process.stdout is not None and process.stdout.readline().strip() == "cleaning up"
    process.send_signal(signal.SIGINT)
    code, err = finish(process)
    assert code == -signal.SIGINT and "in clean_up" in err


ENDING_VERB = """
import atexit, sys, threading, time
from nodegraph.transport.shutdown import exit_process

atexit.register(lambda: print("atexit ran"))
threading.Thread(target=lambda: (time.sleep(0.3), print("worker done"))).start()
print("summary, not flushed yet", end=" ")
exit_process(int(sys.argv[1]))
"""


def test_exit_process_ends_as_a_normal_exit_does() -> None:
    """The CLI's way out (no interpreter finalization): the status given, stdout flushed, the running non-daemon
    thread finished before the atexit handlers, which run."""
    done = subprocess.run([sys.executable, "-c", ENDING_VERB, "3"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 3, done.stderr
    assert done.stdout.split() == ["summary,", "not", "flushed", "yet", "worker", "done", "atexit", "ran"]


def test_the_cli_exits_with_its_commands_status() -> None:
    """``so101`` maps the command's ``SystemExit`` to the process status: a bad bag path is status 1 and says why,
    a usage error is Click's status 2, a listing is 0."""
    cli = [sys.executable, "-m", "so101_cli"]
    missing = subprocess.run([*cli, "bag", "info", "/nonexistent/bag"], capture_output=True, text=True, timeout=120)
    assert missing.returncode == 1 and "so101 bag info" in missing.stderr
    usage = subprocess.run([*cli, "bag", "record"], capture_output=True, text=True, timeout=120)
    assert usage.returncode == 2 and "give topics to record" in usage.stderr
    listing = subprocess.run([*cli, "--help"], capture_output=True, text=True, timeout=120)
    assert listing.returncode == 0 and "bag" in listing.stdout
