"""The evaluation graph as a launch description: the policy server, the sim node and the policy node.

One description, two ways to run it. ``so101 eval`` runs it through the launch engine
(:func:`nodegraph.launch.runner.launched`, which adds the zenoh router) with every argument given
(:func:`evaluation_arguments`) and joins the graph as the ``evaluator`` node (:mod:`.evaluate`); ``so101 launch
evaluation checkpoint:=DIR`` and ``ros2 launch so101_bringup evaluation.launch.py checkpoint:=DIR`` run the
checkpoint variant from the bringup catalog, the other arguments at their defaults (those of
:class:`~.config.EvalConfig`, and the sim's cameras and image size).

The server declares its readiness (:data:`SERVER_READY`): the engine starts the sim and the policy node once the
server listens, and the graph is entered once it does (``ros2 launch`` starts all three at once; the policy node
holds until the server answers).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from nodegraph.graph.arguments import format_parameter_value
from nodegraph.launch.description import LaunchArgument, LaunchDescriptionData, NodeEntry
from so101_core.robot_spec import CAMERA_NAMES

from .config import EvalConfig
from .inference_options import PRECISIONS

SERVER_NODE = "server"
SIM_NODE = "sim"
POLICY_NODE = "policy"
SERVER_READY = "serving on"
"""What the policy server prints once it listens."""
SERVER_READY_TIMEOUT_S = 300.0
"""Seconds the server may take to load and warm up its policy."""
CHECKPOINT_SERVER = (
    *("--checkpoint", "$(arg checkpoint)", "--device", "$(arg device)"),
    *("--precision", "$(arg precision)", "--cuda-graph", "$(arg cuda_graph)"),
)
"""The server's ``so101 serve`` arguments in the catalog's variant: a LeRobot checkpoint on a torch device, in a
precision, eager or from CUDA graphs."""
CONFIG_FIELDS = (
    "camera_rate_hz",
    "real_time_factor",
    "seed",
    "randomize",
    "dr_profile",
    "horizon",
    "replan_steps",
    "blend_alpha",
    "temporal_ensemble_coeff",
    "task",
    "server_timeout_ms",
)
"""The :class:`~.config.EvalConfig` fields the graph's nodes take, each a launch argument of the same name."""


def _config_arguments() -> tuple[LaunchArgument, ...]:
    defaults = {field.name: field.default for field in dataclasses.fields(EvalConfig)}
    return tuple(
        LaunchArgument(name, format_parameter_value(defaults[name]), f"the EvalConfig field eval.{name}")
        for name in CONFIG_FIELDS
    )


_GRAPH_ARGUMENTS = (
    LaunchArgument("server_port", "5555", "the policy server's TCP port (loopback)"),
    LaunchArgument("token", "", "the server's api_token (empty: none; not all digits, or YAML reads a number)"),
    LaunchArgument("cameras", format_parameter_value(CAMERA_NAMES), "cameras the sim renders (YAML list)"),
    LaunchArgument("policy_cameras", format_parameter_value(CAMERA_NAMES), "cameras the policy sees: the checkpoint's"),
    LaunchArgument("width", "0", "rendered image width [px] (0: the sim's; the checkpoint's image size fits)"),
    LaunchArgument("height", "0", "rendered image height [px] (0: the sim's)"),
    LaunchArgument(
        "autostart", "false", "start the policy at once (so101 eval starts each episode)", ("true", "false")
    ),
    *_config_arguments(),
)
_CHECKPOINT_ARGUMENTS = (
    LaunchArgument("checkpoint", None, "ACT / Diffusion Policy run, checkpoint or pretrained_model directory"),
    LaunchArgument("device", format_parameter_value(EvalConfig.device), "the server's torch device"),
    LaunchArgument("precision", EvalConfig.precision, "the server's inference precision", PRECISIONS),
    LaunchArgument(
        "cuda_graph",
        format_parameter_value(EvalConfig.cuda_graph),
        "ACT on CUDA: the server's forward pass from CUDA graphs",
        ("true", "false"),
    ),
)


def evaluation_description(serve_args: Sequence[str] | None = None) -> LaunchDescriptionData:
    """The graph of one evaluation, in start order: the server hosting the policy (``serve_args``: the ``so101
    serve`` arguments naming it; ``None``: :data:`CHECKPOINT_SERVER`, with the ``checkpoint``, ``device``,
    ``precision`` and ``cuda_graph`` arguments) on ``server_port`` behind ``token``, ready once it listens; the sim
    rendering ``cameras`` at ``width`` x ``height`` px; the policy node (started by the evaluator each episode unless
    ``autostart``) querying the server with ``policy_cameras`` on the sim's clock."""
    server = NodeEntry(
        "so101_policy",
        "policy_server",
        SERVER_NODE,
        arguments=(
            *(CHECKPOINT_SERVER if serve_args is None else serve_args),
            *("--port", "$(arg server_port)", "--token", "$(arg token)"),
        ),
        ready_line=SERVER_READY,
        ready_timeout_s=SERVER_READY_TIMEOUT_S,
    )
    sim_params = {
        "cameras": "$(arg cameras)",
        "width": "$(arg width)",
        "height": "$(arg height)",
        "camera_rate_hz": "$(arg camera_rate_hz)",
        "real_time_factor": "$(arg real_time_factor)",
        "seed": "$(arg seed)",
        "randomize": "$(arg randomize)",
        "dr_profile": "$(arg dr_profile)",
    }
    policy_params = {
        "sim": True,
        "horizon_sim": "$(arg horizon)",
        "replan_steps": "$(arg replan_steps)",
        "blend_alpha": "$(arg blend_alpha)",
        "temporal_ensemble_coeff": "$(arg temporal_ensemble_coeff)",
        "cameras": "$(arg policy_cameras)",
        "task": "$(arg task)",
        "server_port": "$(arg server_port)",
        "api_token": "$(arg token)",
        "server_timeout_ms": "$(arg server_timeout_ms)",
        "use_sim_time": True,  # the loop and staleness on the twin's /clock: rtf has one home, the sim node
        "autostart": "$(arg autostart)",
    }
    return LaunchDescriptionData(
        "evaluation",
        "so101 eval's graph: policy server, sim node and policy node (so101 eval drives the episodes)",
        arguments=(*(_CHECKPOINT_ARGUMENTS if serve_args is None else ()), *_GRAPH_ARGUMENTS),
        nodes=(
            server,
            NodeEntry("so101_nodes", "sim", SIM_NODE, parameters=(sim_params,)),
            NodeEntry("so101_policy", "policy", POLICY_NODE, parameters=(policy_params,)),
        ),
    )


def evaluation_arguments(
    config: EvalConfig,
    *,
    cameras: Sequence[str],
    policy_cameras: Sequence[str],
    width: int,
    height: int,
    server_port: int,
    token: str,
) -> list[str]:
    """The ``name:=value`` arguments of :func:`evaluation_description` for ``config``: the sim renders
    ``cameras`` at ``width`` x ``height`` px, the policy sees ``policy_cameras``, the server listens on
    ``server_port`` behind ``token``; the policy waits for the evaluator's start. Each value is written as YAML
    reads it back (:func:`~nodegraph.graph.arguments.format_parameter_value`: parameters are read as YAML after
    substitution, so ``#`` in a task or an empty ``dr_profile`` stay what they were)."""
    values: dict[str, Any] = {
        "server_port": server_port,
        "token": token,
        "cameras": tuple(cameras),
        "policy_cameras": tuple(policy_cameras),
        "width": width,
        "height": height,
        "autostart": False,
    }
    values.update({name: getattr(config, name) for name in CONFIG_FIELDS})
    return [f"{name}:={format_parameter_value(value)}" for name, value in values.items()]
