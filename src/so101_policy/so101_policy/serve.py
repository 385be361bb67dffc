"""``so101 serve``: host a policy behind the GR00T N1.6 ZMQ protocol (also ``python -m so101_policy.serve``);
``--protocol n1.5`` speaks GR00T N1.5's dialect instead (:mod:`.protocol_n15`).

Backends: ``--checkpoint DIR`` (an ACT or Diffusion Policy checkpoint, :mod:`.lerobot_policy`), ``--gr00t DIR``
(an Isaac-GR00T model, only where ``gr00t`` imports), ``--replay FILE.npy`` (replay (N, 6) actions in LeRobot
units; with ``--gripper VALUE`` the gripper column is replaced, e.g. by an open gripper). How a checkpoint runs:
``--precision``, ``--compile``, ``--cuda-graph`` (:class:`~.inference_options.InferenceOptions`). Before serving,
``--warmup N`` (default 3) inferences on an observation of the policy's cameras and image size go through the
server's request path (CUDA / cuDNN initialisation, autotuning, compilation, the capture of the CUDA graph
for one observation a request happen then, not in a client's first request); only then it prints ``serving on
<address> (..., warm-up N inferences in S s, last M ms)``, and ``ping`` answers ``ready: true`` with the warm-up
time.
"""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
from nodegraph.launch.description import parse_bool
from nodegraph.launch.errors import LaunchArgumentError
from nodegraph.transport.shutdown import install_signal_handlers

from .backend import PolicyBackend, warmup_observation
from .errors import PolicyError
from .inference_options import PRECISIONS, InferenceOptions
from .protocol import DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_PORT, DEFAULT_PROTOCOL, PROTOCOLS
from .replay_policy import ReplayPolicy
from .server import PolicyServer, ServerConfig


def build_backend(args: argparse.Namespace) -> PolicyBackend:
    chosen = [name for name in ("checkpoint", "gr00t", "replay") if getattr(args, name)]
    if len(chosen) != 1:
        raise PolicyError("give exactly one of --checkpoint, --gr00t, --replay")
    if args.checkpoint:
        from .lerobot_policy import load_policy

        return load_policy(args.checkpoint, device=args.device, options=inference_options(args))
    if args.gr00t:
        from .gr00t_policy import Gr00tPolicy

        return Gr00tPolicy(args.gr00t, device=args.device)
    actions = np.load(args.replay, allow_pickle=False)
    cameras = tuple(c for c in args.cameras.split(",") if c)
    return ReplayPolicy(actions, horizon=args.horizon, cameras=cameras, gripper_override=args.gripper)


def inference_options(args: argparse.Namespace) -> InferenceOptions:
    """How ``--checkpoint`` runs: ``--precision``, ``--compile``, ``--cuda-graph``."""
    return InferenceOptions(args.precision, args.compile, args.cuda_graph)


def _launch_bool(value: str) -> bool:
    """A launch argument's boolean (nodegraph's rule: true/false/1/0) as an argparse type."""
    try:
        return parse_bool(value, "--cuda-graph")
    except LaunchArgumentError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="so101 serve", description=__doc__)
    p.add_argument("--checkpoint", type=Path, help="ACT / Diffusion Policy run, checkpoint or pretrained_model dir")
    p.add_argument("--gr00t", type=Path, help="Isaac-GR00T model dir (needs the gr00t package)")
    p.add_argument("--replay", type=Path, help=".npy of (N, 6) actions in LeRobot units")
    p.add_argument("--gripper", type=float, default=None, help="replay: constant gripper value (0..100)")
    p.add_argument("--cameras", default="", help="replay: cameras the observation must carry (a,b,c)")
    p.add_argument("--horizon", type=int, default=16, help="replay: chunk length")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=DEFAULT_PORT)
    p.add_argument("--token", default=None, help="api_token clients must send (also enables kill)")
    p.add_argument("--device", default="auto")
    p.add_argument("--precision", default="fp32", choices=PRECISIONS, help="ACT: CUDA autocast")
    p.add_argument("--compile", default="", help="ACT only: torch.compile mode, e.g. reduce-overhead")
    p.add_argument(
        "--cuda-graph",
        nargs="?",
        const=True,
        default=False,
        type=_launch_bool,
        help="ACT on CUDA only: replay the forward pass from a CUDA graph per batch size (captured in the warm-up); "
        "also --cuda-graph true|false (a launch argument's value)",
    )
    p.add_argument("--max-message-bytes", type=int, default=DEFAULT_MAX_MESSAGE_BYTES)
    p.add_argument("--protocol", default=DEFAULT_PROTOCOL, choices=PROTOCOLS, help="GR00T version of the wire")
    p.add_argument("--warmup", type=int, default=3, help="inferences before announcing readiness (0 = none)")
    return p


def server_config(args: argparse.Namespace) -> ServerConfig:
    return ServerConfig(args.host, args.port, args.token, args.max_message_bytes, args.protocol)


def serve(args: argparse.Namespace, announce: Any = print) -> int:
    """Build the backend, warm it up, announce ``serving on ...`` and serve until killed or signalled."""
    if args.warmup < 0:
        raise ValueError(f"--warmup must be >= 0, got {args.warmup}")
    backend = build_backend(args)
    server = PolicyServer(backend, server_config(args))
    stop = threading.Event()
    install_signal_handlers(stop)  # SIGINT/SIGTERM stop the server; a second one or the deadline ends the process

    def stop_on_signal() -> None:
        stop.wait()
        server.stop()

    threading.Thread(target=stop_on_signal, name="serve-stop", daemon=True).start()
    try:
        warm = server.warm_up(warmup_observation(backend), args.warmup)
        if server.stopped:
            return 0
        announce(
            f"serving on {server.endpoint} (GR00T {server.config.protocol} protocol, cameras {list(backend.cameras)},"
            f" horizon {backend.horizon}; warm-up {warm.runs} inferences in {warm.total_s:.2f} s, last "
            f"{warm.last_s * 1e3:.1f} ms)"
        )
        sys.stdout.flush()
        server.serve_forever()
    finally:
        server.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--ros-args" in argv:  # started by a launcher: ROS arguments are not ours
        argv = argv[: argv.index("--ros-args")]
    args = parser().parse_args(argv)
    args.token = args.token or None
    try:
        return serve(args)
    except (PolicyError, OSError, ValueError) as exc:
        print(f"so101 serve: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
