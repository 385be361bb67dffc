"""so101's launch catalog: every description resolves with its defaults, names installed executables, and
``so101 launch``'s lookup reports bad names and arguments."""

from __future__ import annotations

import io

import pytest
from nodegraph.launch.errors import ExecutableNotFoundError, UnknownLaunchError
from nodegraph.launch.executables import EntryPointResolver
from nodegraph.launch.resolve import resolve_launch
from nodegraph.launch.runner import RunnerOptions
from nodegraph.transport.zenoh.config import free_endpoint
from so101_bringup.launch.catalog import get_launch, launch_names, run_launch


def test_catalog_launches_resolve_with_their_defaults() -> None:
    assert {"demo", "record", "sim"} <= set(launch_names())
    available = "available: demo, evaluation, policy, real, record, sim, skillgen, teleop"
    with pytest.raises(UnknownLaunchError, match=f"no launch named 'nope'; {available}"):
        get_launch("nope")
    assert get_launch("demo.launch.py") is get_launch("demo")
    required = {"evaluation": ["checkpoint:=runs/act"]}  # arguments without a default
    for name in launch_names():
        resolved = resolve_launch(get_launch(name), required.get(name, []))
        assert resolved.nodes, name
        for node in resolved.nodes:  # every so101 executable a launch names exists as a console script
            if node.package in ("so101_nodes", "so101_policy"):
                EntryPointResolver()(node.package, node.executable)
    demo = resolve_launch(get_launch("demo"), ["rate:=30", "namespace:=arm", "record:=false"])
    assert [(n.fully_qualified_name, n.parameters) for n in demo.nodes] == [
        ("/arm/joint_state_source", ({"rate_hz": 30},))
    ]
    record = resolve_launch(get_launch("record"), ["topics:=[/joint_states, /tf]", "output:=bags/x"])
    assert record.nodes[0].parameters == ({"topics": ["/joint_states", "/tf"], "output": "bags/x"},)


def test_executables_resolve_to_console_scripts() -> None:
    command = EntryPointResolver()("so101_nodes", "recorder")
    assert command[1] == "-c" and "from so101_nodes.recorder_node import main" in command[2]
    with pytest.raises(ExecutableNotFoundError, match=r"no executable 'nope'; it declares: .*joint_state_source"):
        EntryPointResolver()("so101_nodes", "nope")
    with pytest.raises(ExecutableNotFoundError, match="'not_a_package' is not installed"):
        EntryPointResolver()("not_a_package", "x")


def test_policy_launch_runs_beside_sim_or_real() -> None:
    plain = resolve_launch(get_launch("policy"))
    assert [n.name for n in plain.nodes] == ["policy"]  # the server only with serve:=true
    (node,) = plain.nodes
    assert node.package == "so101_policy" and node.executable == "policy"
    assert node.parameters[0]["autostart"] is False and node.parameters[0]["cameras"] == ["ego", "side", "top"]
    served = resolve_launch(get_launch("policy"), ["serve:=true", "checkpoint:=runs/act", "sim:=true", "token:=t"])
    assert [n.name for n in served.nodes] == ["policy_server", "policy"]
    assert served.nodes[0].arguments[:2] == ("--checkpoint", "runs/act")
    assert served.nodes[1].parameters[0]["sim"] is True and served.nodes[1].parameters[0]["api_token"] == "t"
    from so101_policy.serve import parser  # the server's arguments as so101 serve reads them

    assert parser().parse_args(list(served.nodes[0].arguments)).cuda_graph is False
    fast = resolve_launch(get_launch("policy"), ["serve:=true", "checkpoint:=x", "precision:=bf16", "cuda_graph:=true"])
    args = parser().parse_args(list(fast.nodes[0].arguments))
    assert (args.precision, args.cuda_graph) == ("bf16", True)


def test_the_evaluation_launch_is_so101_evals_graph_serving_a_checkpoint() -> None:
    from so101_policy.config import EvalConfig
    from so101_policy.evaluation_graph import SERVER_READY

    assert get_launch("evaluation").arguments[0].name == "checkpoint"  # mandatory
    server, sim, policy = resolve_launch(get_launch("evaluation"), ["checkpoint:=runs/act", "blend_alpha:=0.5"]).nodes
    assert (server.executable, sim.executable, policy.executable) == ("policy_server", "sim", "policy")
    assert server.arguments[:4] == ("--checkpoint", "runs/act", "--device", "auto")
    assert server.ready_line == SERVER_READY  # sim and policy node start once the server listens
    assert sim.parameters[0]["seed"] == EvalConfig().seed and policy.parameters[0]["blend_alpha"] == 0.5


def test_run_launch_reports_unknown_launch_and_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_launch("nope", []) == 2
    assert (
        "no launch named 'nope'; available: demo, evaluation, policy, real, record, sim, skillgen, teleop"
        in capsys.readouterr().err
    )
    assert run_launch("demo", ["rate"]) == 2
    assert "launch arguments are name:=value, got 'rate'" in capsys.readouterr().err
    assert run_launch("demo", ["record:=maybe"]) == 2
    assert "'maybe' is not one of ['true', 'false']" in capsys.readouterr().err


@pytest.mark.timeout(120)
def test_so101_launch_evaluation_without_a_checkpoint_stops_at_the_server() -> None:
    """The real executables: the server is first and must be ready before the sim and the policy node start."""
    stream = io.StringIO()
    options = RunnerOptions(endpoint=free_endpoint(), stream=stream, colour=False)
    assert run_launch("evaluation", ["checkpoint:=/nonexistent"], options) == 1
    said = stream.getvalue()
    assert "node server exited (exit code 2) before printing 'serving on'" in said and "no checkpoint at" in said
    assert "started /sim" not in said and "started /policy" not in said
