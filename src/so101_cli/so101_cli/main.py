"""``so101``: the command line of the stack (launch, graph, node, topic, service, param, action, bag, bench, demo,
sysid, train, serve, eval, compare)."""

from __future__ import annotations

import os

import typer
from nodegraph.transport.shutdown import exit_code, exit_process

from so101_cli import (
    action_cmd,
    bag_cmd,
    bench_cmd,
    calibrate_cmd,
    dataset_cmd,
    demo_cmd,
    graph_cmd,
    launch_cmd,
    node_cmd,
    param_cmd,
    pipeline_cmd,
    policy_cmd,
    seeds_cmd,
    service_cmd,
    skillgen_cmd,
    sysid_cmd,
    topic_cmd,
)

os.environ.setdefault("HF_HUB_OFFLINE", "1")

app = typer.Typer(
    name="so101",
    help="so101: the open sim-to-real stack for the SO-101 arm (ROS 2 graph over rclpy or Zenoh).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(launch_cmd.launch)
app.command()(graph_cmd.graph)
app.command()(demo_cmd.demo)
app.command()(calibrate_cmd.calibrate)
app.command()(policy_cmd.train)
app.command()(policy_cmd.serve)
app.command("eval")(policy_cmd.evaluate)
app.command()(policy_cmd.compare)
app.add_typer(topic_cmd.app, name="topic")
app.add_typer(action_cmd.app, name="action")
app.add_typer(service_cmd.app, name="service")
app.add_typer(param_cmd.app, name="param")
app.add_typer(node_cmd.app, name="node")
app.add_typer(bag_cmd.app, name="bag")
app.add_typer(bench_cmd.app, name="bench")
app.add_typer(seeds_cmd.app, name="seeds")
app.add_typer(skillgen_cmd.app, name="skillgen")
app.add_typer(dataset_cmd.app, name="dataset")
app.add_typer(pipeline_cmd.app, name="pipeline")
app.add_typer(sysid_cmd.app, name="sysid")


def main() -> None:
    """Run the command; the process ends without the interpreter's finalization (``exit_process``)."""
    try:
        app()
    except SystemExit as done:
        exit_process(exit_code(done.code))
    exit_process(0)


if __name__ == "__main__":
    main()
