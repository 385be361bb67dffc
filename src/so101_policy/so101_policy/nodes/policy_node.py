"""policy: the 30 Hz control loop between the graph and a policy server (GR00T N1.6 protocol).

Every period (1 / ``rate_hz``) the node takes the latest ``joint_states`` and camera images, and
(in a worker thread, so the loop never waits) asks the server for an action chunk with the observation in
LeRobot units. Chunks are EMA-blended into the plan (:mod:`so101_policy.blending`, ``blend_alpha``), or, with
``temporal_ensemble_coeff`` > 0, merged by ACT's temporal ensemble (every prediction made for a step averaged with
weights ``exp(-coeff * k)``, k = 0 the oldest; ``blend_alpha`` unused); the first ``horizon`` actions of a chunk
are used (``horizon`` real, ``horizon_sim`` with ``sim:=true``), a new one is asked every ``replan_steps`` (0 =
horizon / 2). The plan's action for this step goes out on ``joint_commands``. The step (sent to the server as
``options["step"]``) counts control periods from the run's first action: a slow first reply (a server warming up)
does not move a step-indexed policy, such as a replay, ahead of the arm.

Chunks enter the plan through :func:`so101_policy.admission.admit_chunk` (the rule an evaluator shares): only
the rows that will execute are checked (the first ``horizon``, less those already past); values outside a
joint's range are clamped into it (counted: ``clamped_values``, ``clamped_chunks``); a chunk with NaN / inf,
a value more than ``max_excursion_rad`` outside the range, or a first executed action further than
``max_step_rad`` from the last command (or the measured position) is refused, and the plan already queued runs
on (WARN "running: chunk refused ..."). ``refusal_limit`` chunks refused in a row are a **refusal loop** (a
deterministic policy facing a held arm returns the same chunk forever): the node reports it on ``/diagnostics``
(ERROR "holding: refusal loop ..."), holds the position measured then, asks the server nothing more and stays
so until ``~/start``.

Safe on every other failure: a stale or missing joint state or camera image, a server timeout, death or error
reply, or a plan that ran out → the node holds (publishes the position measured when the hold began), says why
on ``/diagnostics`` (WARN; ERROR when the server is unreachable), and resumes by itself once the cause clears
(a fresh input, a good chunk). Commands never leave the joint range (clipped again on publish).

Services: ``~/start`` (std_srvs/Trigger: reset the server's policy, start at step 0) and ``~/stop`` (hold the
measured position once, then publish nothing). Nothing moves before ``~/start`` unless ``autostart``.

Parameters (defaults from ``policy_config``, i.e. config/policy.yaml): ``rate_hz``, ``horizon``,
``horizon_sim``, ``sim``, ``replan_steps``, ``blend_alpha``, ``temporal_ensemble_coeff``, ``cameras``, ``task``,
``server_host``, ``server_port``, ``api_token``, ``server_timeout_ms``, ``stale_joint_s``, ``stale_camera_s``,
``max_step_rad``, ``max_excursion_rad``, ``refusal_limit``, ``autostart``, ``diagnostics_period_s``, ``use_sim_time``.

Time: the loop runs on the node's clock. Its period is a timer's, and an input is stale when it was received
more than ``stale_joint_s`` / ``stale_camera_s`` ago by ``node.now_ns()``; under ``use_sim_time`` (the evaluator
runs it so beside the twin) both are sim seconds of ``/clock``, so a sim running faster than real time
(``real_time_factor``, the sim node's one parameter for it) speeds the loop up with it, and a paused sim pauses
it. ``server_timeout_ms`` stays wall-clock milliseconds: a round trip to the server takes wall time.
"""

from __future__ import annotations

import math
import queue
import threading
import time
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import numpy.typing as npt
from nodegraph.diagnostics import ERROR, OK, WARN, diagnostic_array, diagnostics_publisher, status_message
from nodegraph.graph.api import Node
from nodegraph.graph.declared_params import declare_params
from nodegraph.images import ImageError, to_rgb
from so101_core.arrays import F64
from so101_core.lerobot_units import from_lerobot, to_lerobot
from so101_core.robot_spec import JOINT_NAMES

from so101_policy.admission import ChunkLimits, admit_chunk
from so101_policy.blending import Plan
from so101_policy.client import PolicyClient
from so101_policy.config import PolicyNodeConfig, load_policy_config
from so101_policy.errors import PolicyError, ServerTimeout
from so101_policy.protocol import chunk_to_array, observation


@dataclass(frozen=True)
class _ConfigFile:
    """``policy_config``, declared first: the policy.yaml giving the other parameters' defaults ("" = the
    config directory's)."""

    policy_config: str = ""


@dataclass(frozen=True)
class PolicyParams(PolicyNodeConfig):
    """The node's parameters: :class:`PolicyNodeConfig` plus the node-only ones (see the module docstring)."""

    sim: bool = False
    api_token: str = ""
    diagnostics_period_s: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.diagnostics_period_s > 0:
            raise ValueError(f"policy: diagnostics_period_s must be > 0, got {self.diagnostics_period_s}")

    @property
    def active_horizon(self) -> int:
        return self.horizon_sim if self.sim else self.horizon

    @property
    def replan_every(self) -> int:
        return self.replan_steps or max(1, self.active_horizon // 2)

    @classmethod
    def declare(cls, node: Node) -> PolicyParams:
        """policy.yaml (or the ``policy_config`` file) gives the defaults of its fields, the class the rest."""
        path = declare_params(node, _ConfigFile, read_only=False).policy_config
        base = load_policy_config(path or None)
        return declare_params(node, cls, cls(**{f.name: getattr(base, f.name) for f in fields(base)}), read_only=False)


@dataclass
class _Reply:
    step: int  # control step of the observation
    actions: F64 | None  # (H, 6) rad, validated
    error: str = ""
    unreachable: bool = False
    latency_s: float = 0.0


class PolicyNode:
    """The policy node (see the module docstring)."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self.params = p = PolicyParams.declare(node)
        self.limits = ChunkLimits.from_config(p)
        self.period_s = 1.0 / p.rate_hz  # s of the node clock (sim seconds under use_sim_time)
        self._lock = threading.Lock()
        self._joints: tuple[F64, int] | None = None  # (q rad, node-clock ns received)
        self._images: dict[str, tuple[npt.NDArray[np.uint8], int]] = {}  # camera → (image, node-clock ns received)
        self._running = False
        self._step = 0
        self._acted = False  # an action went out since ~/start: the step counts from then
        self._plan: Plan | None = None
        self._hold: F64 | None = None
        self._reasons: list[str] = []
        self._shown_note = ""
        self._note = ""  # a warning while running (a refused chunk, the queued plan runs on)
        self._refusal = ""  # why the last chunk was refused ("" once one is accepted)
        self._refusals = 0  # chunks refused in a row
        self._halted = ""  # a refusal loop: hold, no queries until ~/start
        self._server_fault = ""
        self._server_unreachable = False
        self._inflight = False
        self._jobs: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=4)
        self._replies: queue.Queue[_Reply] = queue.Queue()
        self._last_request_step = -(10**9)
        self._last_tick = math.nan
        self._last_command: F64 | None = None  # the last position published on joint_commands
        self.periods: list[float] = []
        """Wall-clock seconds between ticks (a scheduling diagnostic: the loop's jitter)."""
        self.stats = {
            "queries": 0,
            "failures": 0,
            "published": 0,
            "held": 0,
            "rejected_chunks": 0,
            "refusal_loops": 0,
            "clamped_chunks": 0,
            "clamped_values": 0,
            "late_chunks": 0,
        }
        self.latencies: list[float] = []
        self.client = PolicyClient(
            p.server_host,
            p.server_port,
            timeout_ms=p.server_timeout_ms,  # wall-clock: a round trip to the server takes wall time
            api_token=p.api_token or None,
        )
        self.commands = node.create_publisher("sensor_msgs/msg/JointState", "joint_commands")
        self.diagnostics = diagnostics_publisher(node)
        node.create_subscription("sensor_msgs/msg/JointState", "joint_states", self.on_joint_state)
        for cam in p.cameras:
            node.create_subscription("sensor_msgs/msg/Image", f"cameras/{cam}/image_raw", self._image_callback(cam))
        node.create_service("std_srvs/srv/Trigger", "~/start", self.on_start)
        node.create_service("std_srvs/srv/Trigger", "~/stop", self.on_stop)
        self._stop = threading.Event()
        self._worker = threading.Thread(target=self._work, name="policy-client", daemon=True)
        self._worker.start()
        self._timers = [
            node.create_timer(self.period_s, self.on_tick),
            node.create_timer(p.diagnostics_period_s, self.publish_diagnostics),
        ]
        if p.autostart:
            self._start()
        node.logger.info(
            f"policy loop at {p.rate_hz:g} Hz of node-clock time, horizon {p.active_horizon}, server "
            f"{self.client.address}, cameras {list(p.cameras)}" + (" (autostart)" if p.autostart else "")
        )

    # ------------------------------------------------------------------ inputs
    def on_joint_state(self, msg: Any) -> None:
        names, pos = list(msg.name), np.asarray(msg.position, dtype=np.float64).reshape(-1)
        if names and len(names) == len(pos) and all(n in names for n in JOINT_NAMES):
            q = np.array([pos[names.index(n)] for n in JOINT_NAMES])
        elif not names and len(pos) == len(JOINT_NAMES):
            q = pos
        else:
            return
        if np.all(np.isfinite(q)):
            with self._lock:
                self._joints = (q, self.node.now_ns())

    def _image_callback(self, camera: str) -> Any:
        def callback(msg: Any) -> None:
            self.on_image(camera, msg)

        return callback

    def on_image(self, camera: str, msg: Any) -> None:
        try:
            img = to_rgb(msg)
        except ImageError:
            return  # not a colour image, or a malformed one: the camera stays stale (reported on /diagnostics)
        with self._lock:
            self._images[camera] = (img, self.node.now_ns())

    # ------------------------------------------------------------------ services
    def _start(self) -> None:
        with self._lock:
            self._running, self._step, self._plan, self._hold = True, 0, None, None
            self._acted, self._last_command = False, None
            self._last_request_step = -(10**9)
            self._refusal, self._refusals, self._halted, self._note = "", 0, "", ""
        self._submit(("reset", None))

    def on_start(self, request: Any, response: Any) -> Any:
        self._start()
        response.success, response.message = True, "policy started"
        self.node.logger.info("started")
        return response

    def on_stop(self, request: Any, response: Any) -> Any:
        with self._lock:
            was, self._running, self._plan = self._running, False, None
            joints = self._joints
        if joints is not None:
            self._publish(joints[0])
        response.success, response.message = True, "policy stopped (holding)" if was else "policy was not running"
        self.node.logger.info("stopped")
        return response

    # ------------------------------------------------------------------ worker (blocking server calls)
    def _submit(self, job: tuple[str, Any]) -> bool:
        try:
            self._jobs.put_nowait(job)
        except queue.Full:
            return False
        return True

    def _work(self) -> None:
        while not self._stop.is_set():
            try:
                kind, payload = self._jobs.get(timeout=0.1)
            except queue.Empty:
                continue
            if kind == "reset":
                try:
                    self.client.reset()
                except PolicyError as exc:
                    self._replies.put(_Reply(-1, None, f"reset failed: {exc}", isinstance(exc, ServerTimeout)))
                continue
            step, obs = payload
            t0 = time.monotonic()
            try:
                action, _ = self.client.get_action(obs, {"step": step})
                actions = from_lerobot(chunk_to_array(action))
                reply = _Reply(step, actions, latency_s=time.monotonic() - t0)
            except ServerTimeout as exc:
                reply = _Reply(step, None, str(exc), unreachable=True)
            except PolicyError as exc:
                reply = _Reply(step, None, str(exc))
            except Exception as exc:  # a broken reply must not end the worker
                reply = _Reply(step, None, f"{type(exc).__name__}: {exc}")
            self._replies.put(reply)

    # ------------------------------------------------------------------ the loop
    def _take_replies(self, q: F64 | None, step: int) -> None:
        while True:
            try:
                reply = self._replies.get_nowait()
            except queue.Empty:
                return
            if reply.step >= 0:
                self._inflight = False
            if reply.actions is None:
                self.stats["failures"] += 1
                self._server_fault, self._server_unreachable = reply.error, reply.unreachable
                self._plan = None
                continue
            if q is None or self._halted:  # nothing to check it against / a refusal loop already ended the run
                continue
            self._admit(reply, q, step)

    def _admit(self, reply: _Reply, q: F64, step: int) -> None:
        p = self.params
        assert reply.actions is not None
        reference, name = (self._last_command, "the last command") if self._last_command is not None else (q, "the arm")
        result = admit_chunk(
            self._plan,
            reply.actions,
            reply.step,
            step,
            p.active_horizon,
            p.blend_alpha,
            self.limits,
            reference,
            name,
            ensemble_coeff=p.temporal_ensemble_coeff,
        )
        self._server_fault, self._server_unreachable = "", False
        if result.refused:
            self.stats["rejected_chunks"] += 1
            self._refusals += 1
            self._refusal = result.refused
            self._note = f"chunk refused: {result.refused}"
            if self._refusals >= p.refusal_limit:
                self.stats["refusal_loops"] += 1
                self._halted = (
                    f"refusal loop: {self._refusals} chunks refused in a row (last: {result.refused}); "
                    "no more queries until ~/start"
                )
                self._plan = None
                self.node.logger.error(f"holding: {self._halted}")
            return
        if result.rows == 0:  # entirely in the past: the queued plan stays
            self.stats["late_chunks"] += 1
            return
        self._refusals, self._refusal, self._note = 0, "", ""
        if result.clamped:
            self.stats["clamped_chunks"] += 1
            self.stats["clamped_values"] += result.clamped
        self.latencies.append(reply.latency_s)
        self._plan = result.plan

    def _inputs(self, now_ns: int) -> tuple[F64 | None, dict[str, npt.NDArray[np.uint8]], list[str]]:
        """The joint state, the fresh camera images and the reasons to hold, at node-clock time ``now_ns``."""
        p, reasons = self.params, []
        with self._lock:
            joints, images = self._joints, dict(self._images)
        q = None
        if joints is None:
            reasons.append("no joint state yet")
        elif (age := (now_ns - joints[1]) * 1e-9) > p.stale_joint_s:
            reasons.append(f"joint state stale ({age:.2f} s old)")
            q = joints[0]
        else:
            q = joints[0]
        frames = {}
        for cam in p.cameras:
            if cam not in images:
                reasons.append(f"no image from {cam} yet")
            elif (age := (now_ns - images[cam][1]) * 1e-9) > p.stale_camera_s:
                reasons.append(f"camera {cam} stale ({age:.2f} s old)")
            else:
                frames[cam] = images[cam][0]
        return q, frames, reasons

    def on_tick(self) -> None:
        """One control period (see the module docstring)."""
        wall = time.monotonic()
        if not math.isnan(self._last_tick):
            self.periods.append(wall - self._last_tick)
            if len(self.periods) > 10000:
                del self.periods[:5000]
        self._last_tick = wall
        with self._lock:
            running, step = self._running, self._step
        q, frames, reasons = self._inputs(self.node.now_ns())
        self._take_replies(q, step)
        if not running:
            self._reasons = ["stopped"]
            return
        p = self.params
        if self._halted:
            reasons = [self._halted]
        if not reasons and not self._inflight:
            due = step - self._last_request_step >= p.replan_every
            low = self._plan is None or self._plan.remaining(step) <= max(0, p.active_horizon - p.replan_every)
            if low or due:
                obs = observation(frames, to_lerobot(q).astype(np.float32), p.task)  # type: ignore[arg-type]
                if self._submit(("action", (step, obs))):
                    self._inflight = True
                    self._last_request_step = step
                    self.stats["queries"] += 1
        if self._server_fault:
            reasons.append(f"server: {self._server_fault}")
        action = self._plan.at(step) if self._plan is not None and not reasons else None
        if action is None and not reasons:
            if self._refusal:
                reasons.append(f"chunk refused: {self._refusal}")
            else:
                reasons.append("waiting for an action chunk" if self._plan is None else "plan ran out (server late)")
        note = self._note if action is not None else ""
        changed = (reasons, note) != (self._reasons, self._shown_note)
        self._reasons, self._shown_note = reasons, note
        if action is not None:
            self._hold = None
            self._publish(np.clip(action, self.limits.lower, self.limits.upper))
            self.stats["published"] += 1
            self._acted = True
        else:
            if self._hold is None and q is not None:
                self._hold = q.copy()
            if changed:
                self.node.logger.warning(f"holding: {'; '.join(reasons)}")
            if self._hold is not None:
                self._publish(self._hold)
            self.stats["held"] += 1
        if changed:
            if not reasons:
                self.node.logger.info(f"running: {note}" if note else "running")
            self.publish_diagnostics()
        with self._lock:
            if self._running and self._acted:
                self._step += 1

    def _publish(self, q: F64) -> None:
        self._last_command = q.copy()
        header = self.node.message("std_msgs/msg/Header", stamp=self.node.stamp(), frame_id="")
        self.commands.publish(
            self.node.message("sensor_msgs/msg/JointState", header=header, name=list(JOINT_NAMES), position=q)
        )

    # ------------------------------------------------------------------ diagnostics
    def status(self) -> tuple[int, str]:
        """(level, message) now: OK running or stopped, WARN holding or running after a refused chunk, ERROR when
        the server is unreachable or in a refusal loop."""
        reasons = self._reasons
        if not reasons:
            return (WARN, f"running: {self._shown_note}") if self._shown_note else (OK, "running")
        if reasons == ["stopped"]:
            return OK, "stopped"
        level = ERROR if self._server_unreachable or self._halted else WARN
        return level, "holding: " + "; ".join(reasons)

    def diagnostic_values(self) -> dict[str, str]:
        """The key/values of the node's diagnostic status: state, step, counters (``stats``), timings."""
        message = self.status()[1]
        periods = np.asarray(self.periods[-300:])
        return {
            "state": message.split(":")[0],
            "step": str(self._step),
            "horizon": str(self.params.active_horizon),
            "server": self.client.address,
            **{k: str(v) for k, v in self.stats.items()},
            "latency_ms_last": f"{self.latencies[-1] * 1e3:.1f}" if self.latencies else "",
            "period_ms_p99": f"{np.percentile(periods, 99) * 1e3:.2f}" if len(periods) else "",
        }

    def publish_diagnostics(self) -> None:
        level, message = self.status()
        status = status_message(self.node, "policy", level, message, "policy_server", self.diagnostic_values())
        self.diagnostics.publish(diagnostic_array(self.node, [status]))

    def close(self) -> None:
        self._stop.set()
        for timer in self._timers:
            timer.cancel()
        if self._worker.is_alive():
            self._worker.join(timeout=5.0)
        self.client.close()


def main(args: list[str] | None = None) -> int:
    from nodegraph.transport.runtime import run_node

    return run_node(PolicyNode, "policy", args)


if __name__ == "__main__":
    raise SystemExit(main())
