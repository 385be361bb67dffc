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
