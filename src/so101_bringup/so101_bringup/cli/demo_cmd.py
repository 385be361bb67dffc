"""``so101 demo``: the main job on the embedded default — for now, the ``demo`` launch (a joint-state source and
the recorder over a zenoh router), recorded for a few seconds, then ``so101 bag info`` of the bag."""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import typer

from so101_bringup.bag.reader import format_info, info


def demo(
    seconds: float = typer.Option(5.0, "--seconds", help="how long to record, s"),
    out: Path = typer.Option(None, "--out", help="bag directory (default out/demo_<time>)"),
) -> None:
    """Bring up the demo graph, record /joint_states to an MCAP bag, print its info."""
    bag = out or Path("out") / dt.datetime.now().strftime("demo_%Y%m%d_%H%M%S")
    bag.parent.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "so101_bringup.cli.main", "launch", "demo", f"output:={bag}"]
    typer.echo(f"$ so101 launch demo output:={bag}  (running {seconds:g} s)")
    process = subprocess.Popen(command, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        time.sleep(seconds)
    finally:
        process.send_signal(signal.SIGINT)
        code = process.wait(timeout=60)
    if code != 0:
        typer.echo(f"so101 demo: the launch exited with {code}", err=True)
        raise typer.Exit(code)
    typer.echo(f"\n$ so101 bag info {bag}")
    typer.echo(format_info(info(bag)))
