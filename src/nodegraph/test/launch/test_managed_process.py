"""The supervisor on its own: real child processes with their output in a log file, a wait for a printed line,
staged stop that escalates, and children that end with a SIGKILLed parent."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from launch_test_support import pid_alive, wait_gone
from nodegraph.launch.errors import ProcessFailedError
from nodegraph.launch.output import PrefixedOutput
from nodegraph.launch.process import ManagedProcess, stop_processes

pytestmark = pytest.mark.timeout(60)


def python(code: str) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(code)]


SERVER = python("""
    import signal, sys, time
    print("loading", flush=True)
    time.sleep(0.3)
    print("serving on 1234", flush=True)
    signal.signal(signal.SIGINT, lambda *_: (print("bye", flush=True), sys.exit(0)))
    while True:
        signal.pause()
""")
STUBBORN = python("""
    import signal
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    print("ready", flush=True)
    while True:
        signal.pause()
""")


def test_a_logged_child_is_awaited_and_stopped_with_sigint(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    child = ManagedProcess("server", SERVER, dict(os.environ), log).start()
    assert child.log_path == log
    child.wait_for_line("serving on", 30.0)
    assert child.alive() and "loading\nserving on 1234" in child.tail()
    assert os.getpgid(child.pid) == child.pid  # its own process group
    stop_processes([child], sigint_timeout_s=10.0, sigterm_timeout_s=10.0)
    assert child.poll() == 0 and log.read_text().endswith("bye\n")


def test_an_appending_child_in_the_callers_group_is_awaited_and_signalled_alone(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text("earlier attempt\n")
    first = ManagedProcess("once", python("print('again')"), dict(os.environ), log, append=True).start()
    assert first.wait(30.0) == 0
    assert log.read_text() == "earlier attempt\nagain\n"
    child = ManagedProcess("server", SERVER, dict(os.environ), log, append=True, own_session=False).start()
    child.wait_for_line("serving on", 30.0)
    assert os.getpgid(child.pid) == os.getpgrp()  # the caller's process group
    with pytest.raises(subprocess.TimeoutExpired):
        child.wait(0.1)
    child.signal(signal.SIGINT)  # to the child alone: this test process is in the same group
    assert child.wait(30.0) == 0
    assert log.read_text().startswith("earlier attempt\nagain\nloading\n") and log.read_text().endswith("bye\n")


def test_waiting_for_a_line_fails_on_exit_or_timeout_with_the_log_and_last_lines(tmp_path: Path) -> None:
    failing = ManagedProcess("bad", python("print('no model'); raise SystemExit(3)"), {}, tmp_path / "bad.log")
    exited = r"bad exited \(exit code 3\) before printing 'serving on' \(log: .*bad\.log\); last output:\n    no model"
    with pytest.raises(ProcessFailedError, match=exited):
        failing.start().wait_for_line("serving on", 30.0)
    quiet = ManagedProcess("quiet", STUBBORN, dict(os.environ), tmp_path / "quiet.log").start()
    try:
        with pytest.raises(ProcessFailedError, match=r"quiet did not print 'serving on' within 0.5 s .*:\n    ready"):
            quiet.wait_for_line("serving on", 0.5)
        cancel = threading.Event()
        cancel.set()
        assert quiet.wait_for_line("serving on", 30.0, cancel) is False  # a shutdown ends the wait at once
    finally:
        stop_processes([quiet], sigint_timeout_s=0.2, sigterm_timeout_s=0.2)


def test_stop_escalates_to_sigkill_and_says_so(tmp_path: Path) -> None:
    child = ManagedProcess("mule", STUBBORN, dict(os.environ), tmp_path / "mule.log").start()
    child.wait_for_line("ready", 30.0)
    said = io.StringIO()
    stop_processes([child], PrefixedOutput(said, colour=False), sigint_timeout_s=0.3, sigterm_timeout_s=0.3)
    assert child.poll() == -signal.SIGKILL
    assert "escalating to SIGTERM for: mule" in said.getvalue() and "escalating to SIGKILL" in said.getvalue()


def test_a_forwarding_child_keeps_its_recent_lines() -> None:
    said = io.StringIO()
    child = ManagedProcess("talker", SERVER, dict(os.environ), PrefixedOutput(said, colour=False)).start()
    child.wait_for_line("serving on", 30.0)
    stop_processes([child], sigint_timeout_s=10.0, sigterm_timeout_s=10.0)
    child.finish_output()
    assert child.tail().splitlines() == ["loading", "serving on 1234", "bye"]
    assert said.getvalue().splitlines() == ["[talker] loading", "[talker] serving on 1234", "[talker] bye"]


def test_children_end_with_a_sigkilled_parent(tmp_path: Path) -> None:
    parent_code = f"""
        import os, sys
        from pathlib import Path
        from nodegraph.launch.process import ManagedProcess
        child = ManagedProcess("child", {SERVER!r}, dict(os.environ), Path({str(tmp_path / "child.log")!r})).start()
        child.wait_for_line("serving on", 30.0)
        print(child.pid, flush=True)
        sys.stdin.read()  # until killed (or until this test's end closes the pipe)
    """
    parent = subprocess.Popen(python(parent_code), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        child_pid = int(parent.stdout.readline())
        assert pid_alive(child_pid)
        parent.kill()  # no chance to stop its children: PR_SET_PDEATHSIG sends them SIGTERM
        parent.wait()
        assert not wait_gone([child_pid], 10.0)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
