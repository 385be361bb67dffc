"""The evaluation graph's launch description: what each node is started with for an evaluation's config, that the
engine finds every executable, and the checkpoint variant ``so101 launch evaluation`` runs (the evaluation through
it: test_evaluate.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from nodegraph.launch.errors import LaunchArgumentError
from nodegraph.launch.executables import EntryPointResolver
from nodegraph.launch.resolve import resolve_launch
from so101_policy.config import EvalConfig
from so101_policy.evaluation_graph import (
    POLICY_NODE,
    SERVER_NODE,
    SERVER_READY,
    SIM_NODE,
    evaluation_arguments,
    evaluation_description,
)


def test_the_graph_starts_server_sim_and_policy_node_with_their_parameters() -> None:
    config = EvalConfig(seed=5, camera_rate_hz=10.0, real_time_factor=2.0, randomize=False, server_timeout_ms=700)
    data = evaluation_description(("--checkpoint", "/ckpt", "--device", "cpu"))
    arguments = evaluation_arguments(
        config, cameras=("top", "side"), policy_cameras=("top",), width=32, height=24, server_port=6001, token="abc123"
    )
    launch = resolve_launch(data, arguments)
    assert [n.name for n in launch.nodes] == [SERVER_NODE, SIM_NODE, POLICY_NODE]
    # the server first, declaring its readiness: the engine starts its clients (and enters the graph) once it listens
    assert [n.ready_line for n in launch.nodes] == [SERVER_READY, None, None]
    server, sim, policy = (n.ros_arguments() for n in launch.nodes)
    assert server[: server.index("--ros-args")] == [
        "--checkpoint", "/ckpt", "--device", "cpu", "--port", "6001", "--token", "abc123"
    ]  # fmt: skip
    for expected in ('cameras:=["top", "side"]', "width:=32", "real_time_factor:=2.0", "seed:=5", "randomize:=false"):
        assert expected in sim
    for expected in ("sim:=true", "server_port:=6001", "api_token:=abc123", "use_sim_time:=true", "autostart:=false"):
        assert expected in policy
    assert "server_timeout_ms:=700" in policy and 'cameras:=["top"]' in policy
    resolve = EntryPointResolver()
    for node in launch.nodes:
        assert resolve(node.package, node.executable)[0]  # an installed console script


def test_every_config_value_reaches_its_node_with_its_type() -> None:
    """Parameters are read as YAML after substitution: the evaluator's values must come back as they were."""
    config = EvalConfig(task="pick #3: the vial", dr_profile="", blend_alpha=0.5, replan_steps=4, horizon=12)
    arguments = evaluation_arguments(
        config, cameras=("top",), policy_cameras=("top",), width=32, height=24, server_port=6001, token="eval0123"
    )
    sim, policy = (
        n.parameters[0] for n in resolve_launch(evaluation_description(("--replay", "x")), arguments).nodes[1:]
    )
    assert sim == {
        "cameras": ["top"], "width": 32, "height": 24, "camera_rate_hz": 30.0, "real_time_factor": 1.0,
        "seed": 1984, "randomize": True, "dr_profile": "",
    }  # fmt: skip
    assert policy["task"] == "pick #3: the vial" and policy["api_token"] == "eval0123"
    assert (policy["blend_alpha"], policy["replan_steps"], policy["horizon_sim"]) == (0.5, 4, 12)


def test_the_catalog_variant_serves_a_checkpoint_with_the_eval_defaults() -> None:
    data = evaluation_description()
    with pytest.raises(LaunchArgumentError, match="needs argument checkpoint:=VALUE"):
        resolve_launch(data)
    server, sim, policy = resolve_launch(data, ["checkpoint:=runs/act", "server_port:=6000"]).nodes
    assert server.arguments == (
        *("--checkpoint", "runs/act", "--device", "auto", "--precision", "fp32", "--cuda-graph", "false"),
        *("--port", "6000", "--token", ""),
    )
    defaults = EvalConfig()
    assert sim.parameters[0]["seed"] == defaults.seed and sim.parameters[0]["cameras"] == ["ego", "side", "top"]
    assert policy.parameters[0]["task"] == defaults.task and policy.parameters[0]["autostart"] is False
    assert policy.parameters[0]["server_timeout_ms"] == defaults.server_timeout_ms


def test_the_servers_inference_options_reach_so101_serve(tmp_path: Path) -> None:
    """``precision``/``cuda_graph``: launch arguments of the catalog variant and EvalConfig fields of ``so101 eval``,
    both read by ``so101 serve``'s own parser; a bad value is refused where it is given."""
    from so101_policy.bench_policy import synthetic_checkpoint
    from so101_policy.errors import ConfigError
    from so101_policy.evaluate import checkpoint_spec
    from so101_policy.serve import parser

    given = ["checkpoint:=runs/act", "precision:=bf16", "cuda_graph:=true"]
    server = resolve_launch(evaluation_description(), given).nodes[0]
    args = parser().parse_args(list(server.arguments))
    assert (args.precision, args.cuda_graph, args.device) == ("bf16", True, "auto")
    with pytest.raises(LaunchArgumentError, match="precision"):
        resolve_launch(evaluation_description(), ["checkpoint:=runs/act", "precision:=int8"])
    checkpoint = synthetic_checkpoint(tmp_path, 64, 48, cameras=("top",))
    fp16_graph = EvalConfig(precision="fp16", cuda_graph=True)
    for config, expected in ((EvalConfig(), ("fp32", False)), (fp16_graph, ("fp16", True))):
        args = parser().parse_args(list(checkpoint_spec(checkpoint, "cpu", config.inference()).serve_args))
        assert (args.precision, args.cuda_graph, args.device) == (*expected, "cpu")
    with pytest.raises(ConfigError, match=r"eval\.precision: precision must be one of"):
        EvalConfig(precision="int8")
    with pytest.raises(ConfigError, match=r"eval\.cuda_graph: cuda_graph must be true or false"):
        EvalConfig(cuda_graph="yes")  # type: ignore[arg-type]
