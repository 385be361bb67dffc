"""``policy``: the 30 Hz policy node (and, with ``serve:=true``, a policy server hosting an ACT checkpoint),
started beside ``sim`` or ``real``: it reads ``joint_states`` and the cameras and publishes ``joint_commands``.
Nothing moves before ``policy/start`` (std_srvs/Trigger) unless ``autostart:=true``."""

from nodegraph.launch.description import LaunchArgument, LaunchDescriptionData, NodeEntry
from so101_policy.inference_options import PRECISIONS

from so101_bringup.launch.descriptions import node

DESCRIPTION = LaunchDescriptionData(
    name="policy",
    description="Policy node (30 Hz, GR00T N1.6 protocol client) and an optional ACT policy server.",
    arguments=(
        LaunchArgument("sim", "false", "horizon_sim (16) instead of horizon (8)", choices=("true", "false")),
        LaunchArgument("serve", "false", "also start a policy server for checkpoint", choices=("true", "false")),
        LaunchArgument("checkpoint", "", "ACT run / checkpoint directory for serve:=true"),
        LaunchArgument("server_host", "127.0.0.1", "policy server host"),
        LaunchArgument("server_port", "5555", "policy server port"),
        LaunchArgument("token", "", "api_token of the policy server (empty: none)"),
        LaunchArgument("cameras", "[ego, side, top]", "cameras the policy sees (YAML list)"),
        LaunchArgument("autostart", "false", "start the control loop at once", choices=("true", "false")),
        LaunchArgument("device", "auto", "serve: torch device"),
        LaunchArgument("precision", "fp32", "serve: inference precision (bf16/fp16: CUDA)", PRECISIONS),
        LaunchArgument(
            "cuda_graph", "false", "serve, ACT on CUDA: the forward pass from CUDA graphs", ("true", "false")
        ),
        LaunchArgument("namespace", "", "namespace pushed onto every node"),
    ),
    nodes=(
        NodeEntry(
            package="so101_policy",
            executable="policy_server",
            name="policy_server",
            arguments=(
                "--checkpoint",
                "$(arg checkpoint)",
                "--host",
                "$(arg server_host)",
                "--port",
                "$(arg server_port)",
                "--token",
                "$(arg token)",
                "--device",
                "$(arg device)",
                "--precision",
                "$(arg precision)",
                "--cuda-graph",
                "$(arg cuda_graph)",
            ),
            condition="serve",
        ),
        node(
            "so101_policy",
            "policy",
            {
                "sim": "$(arg sim)",
                "server_host": "$(arg server_host)",
                "server_port": "$(arg server_port)",
                "api_token": "$(arg token)",
                "cameras": "$(arg cameras)",
                "autostart": "$(arg autostart)",
            },
            required=True,
        ),
    ),
)
