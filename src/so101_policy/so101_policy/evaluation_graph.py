"""The evaluation graph as a launch description: the policy server, the sim node and the policy node.

``so101 eval`` runs it through the launch engine (:func:`nodegraph.launch.runner.launched`, which adds the zenoh
router) and joins the graph as the ``evaluator`` node (:mod:`.evaluate`). The server declares its readiness
(:data:`SERVER_READY`): the engine starts the sim and the policy node once the server listens, and the graph is
entered once it does.
"""

from __future__ import annotations

from collections.abc import Sequence

from nodegraph.launch.description import LaunchDescriptionData, NodeEntry

from .config import EvalConfig

SERVER_NODE = "server"
SIM_NODE = "sim"
POLICY_NODE = "policy"
SERVER_READY = "serving on"
"""What the policy server prints once it listens."""
SERVER_READY_TIMEOUT_S = 300.0
"""Seconds the server may take to load and warm up its policy."""


def evaluation_description(
    serve_args: Sequence[str],
    policy_cameras: Sequence[str],
    config: EvalConfig,
    *,
    cameras: Sequence[str],
    width: int,
    height: int,
    server_port: int,
    api_token: str,
) -> LaunchDescriptionData:
    """The graph of one evaluation, in start order: the server hosting the policy (``serve_args``: the ``so101
    serve`` arguments naming it) on ``server_port`` (TCP, loopback) behind ``api_token``, ready once it listens;
    the sim rendering ``cameras`` at ``width`` x ``height`` px; the policy node (not started: the evaluator starts
    each episode) querying the server with ``policy_cameras`` on the sim's clock."""
    server = NodeEntry(
        "so101_policy",
        "policy_server",
        SERVER_NODE,
        arguments=(*serve_args, "--port", str(server_port), "--token", api_token),
        ready_line=SERVER_READY,
        ready_timeout_s=SERVER_READY_TIMEOUT_S,
    )
    sim_params = {
        "cameras": list(cameras),
        "width": width,
        "height": height,
        "camera_rate_hz": config.camera_rate_hz,
        "real_time_factor": config.real_time_factor,
        "seed": config.seed,
        "randomize": config.randomize,
        "dr_profile": config.dr_profile,
    }
    policy_params = {
        "sim": True,
        "horizon_sim": config.horizon,
        "replan_steps": config.replan_steps,
        "blend_alpha": config.blend_alpha,
        "cameras": list(policy_cameras),
        "task": config.task,
        "server_port": server_port,
        "api_token": api_token,
        "server_timeout_ms": config.server_timeout_ms,
        "use_sim_time": True,  # the loop and staleness on the twin's /clock: rtf has one home, the sim node
        "autostart": False,
    }
    return LaunchDescriptionData(
        "evaluation",
        "so101 eval's graph: policy server, sim node and policy node (the evaluator drives the episodes)",
        nodes=(
            server,
            NodeEntry("so101_nodes", "sim", SIM_NODE, parameters=(sim_params,)),
            NodeEntry("so101_policy", "policy", POLICY_NODE, parameters=(policy_params,)),
        ),
    )
