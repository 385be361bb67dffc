"""The evaluation graph's launch description: what each node is started with, and that the engine finds every
executable (the evaluation through it: test_evaluate.py)."""

from __future__ import annotations

from nodegraph.launch.executables import EntryPointResolver
from nodegraph.launch.resolve import resolve_launch
from so101_policy.config import EvalConfig
from so101_policy.evaluation_graph import POLICY_NODE, SERVER_NODE, SERVER_READY, SIM_NODE, evaluation_description


def test_the_graph_starts_server_sim_and_policy_node_with_their_parameters() -> None:
    config = EvalConfig(seed=5, camera_rate_hz=10.0, real_time_factor=2.0, randomize=False, server_timeout_ms=700)
    data = evaluation_description(
        ("--checkpoint", "/ckpt", "--device", "cpu"),
        ("top",),
        config,
        cameras=("top", "side"),
        width=32,
        height=24,
        server_port=6001,
        api_token="abc123",
    )
    launch = resolve_launch(data)
    assert [n.name for n in launch.nodes] == [SERVER_NODE, SIM_NODE, POLICY_NODE]
    # the server first, declaring its readiness: the engine starts its clients (and enters the graph) once it listens
    assert [n.ready_line for n in launch.nodes] == [SERVER_READY, None, None]
    server, sim, policy = (n.ros_arguments() for n in launch.nodes)
    assert server[: server.index("--ros-args")] == [
        "--checkpoint", "/ckpt", "--device", "cpu", "--port", "6001", "--token", "abc123"
    ]  # fmt: skip
    for expected in ('cameras:=["top", "side"]', "width:=32", "real_time_factor:=2.0", "seed:=5"):
        assert expected in sim
    for expected in ("sim:=true", "server_port:=6001", "api_token:=abc123", "use_sim_time:=true", "autostart:=false"):
        assert expected in policy
    assert "server_timeout_ms:=700" in policy and 'cameras:=["top"]' in policy
    resolve = EntryPointResolver()
    for node in launch.nodes:
        assert resolve(node.package, node.executable)[0]  # an installed console script
