"""``so101 bench ...``: benchmarks; each prints its JSON and records it in ``bench/results/<name>.json``."""

from __future__ import annotations

import json
from typing import Any

import typer

from so101_bringup.benchmarks.results import write_result

app = typer.Typer(help="Benchmarks (results recorded in bench/results/).", no_args_is_help=True)


def _report(name: str, result: dict[str, Any], as_json: bool, save: bool) -> None:
    if save:
        path = write_result(name, result)
        typer.echo(f"recorded in {path}", err=True)
    if as_json:
        typer.echo(json.dumps(result, indent=2))
    else:
        for key, value in result.items():
            typer.echo(f"{key}: {value}")


@app.command()
def transport(
    seconds: float = typer.Option(10.0, "--seconds", help="duration of each load, s"),
    port: int = typer.Option(17447, "--port", help="router port on 127.0.0.1 for the run"),
    as_json: bool = typer.Option(False, "--json", help="print JSON"),
    save: bool = typer.Option(True, "--save/--no-save", help="write bench/results/transport.json"),
) -> None:
    """3 × 640×480 rgb8 @ 30 Hz + JointState @ 100 Hz, recorded to MCAP; vs raw zenoh."""
    from so101_bringup.benchmarks.transport import run_transport_benchmark

    _report("transport", run_transport_benchmark(seconds, port), as_json, save)
