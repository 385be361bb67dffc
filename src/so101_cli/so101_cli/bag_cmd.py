"""``so101 bag record | info | play | recover``: rosbag2 bags in MCAP storage, over the zenoh graph."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from nodegraph.bag.errors import BagError
from nodegraph.bag.metadata import playback_qos
from nodegraph.bag.player import play as play_bag
from nodegraph.bag.reader import format_info
from nodegraph.bag.reader import info as bag_info
from nodegraph.bag.recover import recover as recover_bag

from so101_cli.common import cli_node, interrupt_event

app = typer.Typer(help="Record, inspect and play rosbag2 (MCAP) bags.", no_args_is_help=True)


@app.command()
def record(
    topics: list[str] = typer.Argument(None, help="topics to record"),
    all_topics: bool = typer.Option(False, "--all", "-a", help="record every topic on the graph"),
    output: Path = typer.Option(None, "--output", "-o", help="bag directory (default rosbag2_<date>)"),
    exclude: list[str] = typer.Option([], "--exclude", "-x", help="topics never recorded"),
    duration_s: float = typer.Option(0.0, "--duration", help="stop after S seconds (0: until Ctrl-C)"),
    chunk_compression: str = typer.Option("zstd", "--chunk-compression", help="MCAP chunks: zstd | lz4 | none"),
) -> None:
    """Record TOPICS (or --all) until Ctrl-C, like ``ros2 bag record -s mcap``."""
    from so101_nodes.recorder_node import Recorder

    if not topics and not all_topics:
        raise typer.BadParameter("give topics to record, or --all")
    overrides: dict[str, Any] = {
        "topics": list(topics or [""]),
        "all": all_topics,
        "exclude": exclude or [""],
        "chunk_compression": chunk_compression,
    }
    if output is not None:
        overrides["output"] = str(output)
    with cli_node("bag_record", overrides) as node, interrupt_event() as stop:
        try:
            recorder = Recorder(node)
        except (BagError, ValueError) as exc:
            typer.echo(f"so101 bag record: {exc}", err=True)
            raise typer.Exit(1) from exc
        try:
            stop.wait(duration_s or None)
        finally:
            recorder.close()
        stats = recorder.writer.stats()
        typer.echo(f"recorded {stats.written} messages to {recorder.params.output} ({stats.dropped} dropped)")


@app.command()
def info(path: Path) -> None:
    """Print what ``ros2 bag info`` prints."""
    try:
        typer.echo(format_info(bag_info(path)))
    except BagError as exc:
        typer.echo(f"so101 bag info: {exc}", err=True)
        raise typer.Exit(1) from exc


@app.command()
def play(
    path: Path,
    rate: float = typer.Option(1.0, "--rate", "-r", help="playback speed factor"),
    loop: bool = typer.Option(False, "--loop", "-l", help="start over at the end"),
    topics: list[str] = typer.Option(None, "--topics", help="only these topics"),
    start_offset_s: float = typer.Option(0.0, "--start-offset", help="skip the first S seconds"),
) -> None:
    """Republish a bag's messages on the graph with the recorded timing, each topic with the QoS its
    publishers offered when recorded (a latched topic is replayed transient_local)."""
    try:
        bag = bag_info(path)
    except BagError as exc:
        typer.echo(f"so101 bag play: {exc}", err=True)
        raise typer.Exit(1) from exc
    with cli_node("bag_play") as node, interrupt_event() as stop:
        publishers = {
            t.name: node.create_publisher(t.type, t.name, playback_qos(t.offered_qos_profiles)) for t in bag.topics
        }
        stop.wait(1.0)  # let subscribers discover the publishers

        def publish(topic: str, type_name: str, cdr: bytes) -> None:
            publishers[topic].publish_raw(cdr)

        count = play_bag(path, publish, rate=rate, loop=loop, topics=topics or None,
                         start_offset_s=start_offset_s, stop_event=stop)  # fmt: skip
        stop.wait(0.3)
    typer.echo(f"published {count} messages")


@app.command()
def recover(path: Path) -> None:
    """Rebuild the index and metadata of a bag whose recorder was killed (like ``ros2 bag reindex``)."""
    try:
        summary = recover_bag(path)
    except BagError as exc:
        typer.echo(f"so101 bag recover: {exc}", err=True)
        raise typer.Exit(1) from exc
    typer.echo(str(summary))
