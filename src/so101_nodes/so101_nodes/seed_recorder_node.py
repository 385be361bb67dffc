"""seed_recorder: records seed demonstrations, one rosbag2 (MCAP) bag plus one compact seed file per episode.

Per episode ``i`` (seed ``seed + i``) it writes ``<output>/seed_{i:03d}/`` (the bag: ``joint_states``,
``joint_commands``, ``leader/joint_states``, ``sim/objects/{vial,standing_vial_<k>,rack}/pose``,
``sim/target_slot``, ``/clock`` and, with
``images``, ``cameras/*/...`` when something publishes them; raw CDR, receive time stamps) and
``<output>/seed_{i:03d}.npz`` (:class:`~so101_core.seeds.format.SeedDemo`, written with ``save_seed``
once the episode has ended). Episodes whose ``.npz`` exists are kept: a re-run resumes at the first missing
one (a bag left without its ``.npz`` by a crash is removed and recorded again).

Steps: one per control period (sim.yaml's ``control_hz``, 30 Hz) of ``joint_states`` stamps (sim clock, or the
driver's clock on the real arm; a faster stream is thinned, the bag keeps every message).
Step ``n`` holds the measured joints (rad, canonical order), the object poses with the latest stamp <= the
state's (world frame, xyz m + wxyz), and the action (rad): the command whose ``header.stamp`` equals the
state's stamp (the scripted expert stamps its answers so), else the latest command received (sample and hold,
e.g. the leader arm). ``t`` is the state stamp minus the first one (s). Steps before the first command of the
episode are not recorded (the arm holds the reset pose; their count is ``extra.lead_steps``).

Success: :class:`~so101_core.sim.task.SuccessDetector` on the received poses (``vial``, the standing vials
``standing_vial_<k>`` of task.yaml, ``rack``), with "held by both jaws" read from the gripper joint (closed
below ``held_gripper_max_rad``: jaw contacts are not on the graph): the vial upright in the episode's target
slot (the latest ``sim/target_slot``; the standing vials stand in the slots of ``fill_order`` before it and
must stay upright there). Without a target slot message the vial may stand in any slot
(``extra.success_source`` ``detector_any_slot``). Without object poses (a real arm without pose tracking) the
operator decides: an episode ended through ``~/next_episode``/``~/stop`` or shutdown is a success, a timeout
is not (``extra.success_source``).

An episode after a ``sim/reset`` holds only messages published after the reset's reply came back (their source
time stamp, on the host clock the twin and the recorder share): a recorder that lags its topics on a busy host
would otherwise still be reading the previous scene (its arm, poses and target slot) into the new episode.

Modes (``mode``):
  - ``scripted``: before each episode ``<expert>/stop``, ``sim/reset`` (so101_msgs/ResetSim, seed ``seed + i``),
    then ``<expert>/start`` (std_srvs/Trigger); the episode ends at success once ``<expert>/done`` (std_msgs/Bool) is
    true, ``done_steps`` steps after done without success, or at ``max_steps`` (task.yaml's when 0).
    Actions come from ``joint_commands``. An episode that ends without success is recorded again on the same
    scene, up to ``retries`` more times (a busy host can starve the expert node: its answers then lag the
    states), as an operator would; the failed tries go to ``<output>/failed/`` (``seed_NNN_try_K.npz`` and
    bag), and the kept seed file says ``extra.tries``.
  - ``teleop``: actions from ``leader/joint_states`` (the human's leader arm); ``sim/reset`` is called when
    the service exists (the twin), not on the real arm. An episode ends on ``~/next_episode``
    (std_srvs/Trigger; the next one starts right away) or ``~/stop`` (std_srvs/Trigger; ends it and stops),
    or at ``max_steps`` when > 0. ``episodes`` 0 records until ``~/stop``.
  In both modes ``~/stop`` ends the recording (scripted: the episode in progress is dropped and recorded
  again on the next run). After the last episode the node shuts down (``exit_when_done``), so that a launch
  with it as a required node ends.

Parameters: ``output`` (directory, required), ``mode``, ``episodes`` (5), ``seed`` (0), ``reset_sim`` (true),
``action_topic`` ("" = per mode), ``expert`` (node name, ``scripted_expert``), ``max_steps`` (0),
``done_steps`` (45), ``retries`` (2), ``episode_timeout_s`` (wall s, 300), ``service_timeout_s`` (s, 30),
``task_config`` / ``sim_config`` (YAML paths, "" = config/), ``images`` (true), ``held_gripper_max_rad`` (0.3),
``exit_when_done`` (true).
"""

from __future__ import annotations

import functools
import math
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from nodegraph.bag.writer import BagWriter
from nodegraph.graph.api import Node
from nodegraph.graph.declared_params import check_bounds, declare_params
from nodegraph.graph.qos import QoS
from nodegraph.interfaces.messages import MessageError, deserialize
from nodegraph.time import to_ns
from so101_core.arrays import F64
from so101_core.robot_spec import CAMERA_NAMES, GRIPPER_INDEX, JOINT_NAMES
from so101_core.seeds.format import FAILED_DIR, save_seed
from so101_core.sim.config import load_sim_config, load_task_config
from so101_core.sim.randomization import prefilled_before
from so101_core.sim.scene import RACK, VIAL, standing_names
from so101_core.sim.task import SuccessDetector, TaskState

from so101_nodes.episode_commander import RESET_SERVICE, EpisodeCommander, EpisodeCommandError
from so101_nodes.seed_episode import SeedEpisode, StreamHistory

MODES = ("scripted", "teleop")
RECORD_QOS = QoS(depth=100)
JOINT_STATE = "sensor_msgs/msg/JointState"
POSE = "geometry_msgs/msg/PoseStamped"
TARGET = "std_msgs/msg/Int32"
POSE_HISTORY = 16
ACTION_HISTORY = 64


def _joint_vector(msg: Any, base: F64) -> F64:
    from so101_nodes.driver_node import joint_vector

    return joint_vector(msg, base)


def seed_name(index: int) -> str:
    """File stem of episode ``index``: ``seed_000``."""
    return f"seed_{index:03d}"


@dataclass(frozen=True)
class SeedRecorderParams:
    """Parameters (see the module docstring); read once at start."""

    output: str
    mode: str = "scripted"
    episodes: int = 5
    seed: int = 0
    reset_sim: bool = True
    action_topic: str = ""
    expert: str = "scripted_expert"
    max_steps: int = 0
    done_steps: int = 45
    retries: int = 2
    episode_timeout_s: float = 300.0
    service_timeout_s: float = 30.0
    task_config: str = ""
    sim_config: str = ""
    images: bool = True
    held_gripper_max_rad: float = 0.3
    exit_when_done: bool = True

    @classmethod
    def declare(cls, node: Node) -> SeedRecorderParams:
        params = declare_params(node, cls, cls(output=""), read_only=False)
        params.validate()
        return params

    def validate(self) -> None:
        """Raise ``ValueError`` naming the first invalid parameter."""
        if not self.output:
            raise ValueError("seed_recorder: parameter 'output' (directory) is required")
        if self.mode not in MODES:
            raise ValueError(f"seed_recorder: parameter 'mode' must be one of {list(MODES)}, got {self.mode!r}")
        for name in ("episodes", "seed", "max_steps", "done_steps", "retries"):
            if getattr(self, name) < 0:
                raise ValueError(f"seed_recorder: parameter {name!r} must be >= 0, got {getattr(self, name)}")
        if self.mode == "scripted" and self.episodes == 0:
            raise ValueError("seed_recorder: parameter 'episodes' must be > 0 in scripted mode")
        check_bounds("seed_recorder", self, positive=("episode_timeout_s", "service_timeout_s"))

    @property
    def resolved_action_topic(self) -> str:
        return self.action_topic or ("joint_commands" if self.mode == "scripted" else "leader/joint_states")


@dataclass(frozen=True)
class EpisodeResult:
    """What one recorded episode produced."""

    index: int
    seed: int | None
    steps: int
    duration_s: float
    success: bool
    end_reason: str
    seed_file: Path | None
    bag: Path


@dataclass(kw_only=True)
class _Episode(SeedEpisode):
    """The episode being recorded: its steps plus the node's side (callbacks write it under the lock)."""

    bag: BagWriter
    detector: SuccessDetector
    start_wall: float = field(default_factory=time.monotonic)
    registered: set[str] = field(default_factory=set)
    success: bool = False
    expert_done: bool = False
    steps_since_done: int = 0
    target_slot: int | None = None  # the target slot the last judged step was judged against


class SeedRecorder:
    """Records seed demos (see the module docstring)."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self.params = p = SeedRecorderParams.declare(node)
        self.output = Path(p.output)
        self.output.mkdir(parents=True, exist_ok=True)
        self.task = load_task_config(p.task_config or None)
        sim_cfg = load_sim_config(p.sim_config or None)
        self.rack = sim_cfg.rack
        self.control_hz = float(sim_cfg.physics.control_hz)
        self.period_ns = round(1e9 / self.control_hz)
        self.max_steps = p.max_steps or (self.task.max_steps if p.mode == "scripted" else 0)
        self.results: list[EpisodeResult] = []
        self.error: str | None = None
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._end_request: str | None = None
        self._episode: _Episode | None = None
        self._q: F64 = np.zeros(len(JOINT_NAMES))
        self.objects = (VIAL, *standing_names(self.task.standing_count), RACK)
        self._history = StreamHistory(self.objects, pose_history=POSE_HISTORY, action_history=ACTION_HISTORY)
        self.target_slot: int | None = None  # the latest sim/target_slot of the current scene
        self._scene_since_ns = 0  # host time (ns) of the last reset: messages sent before it are the old scene's
        self._expert_done = False
        self.states_seen = 0

        self.joint_states_topic = node.resolve("joint_states")
        self.action_topic = node.resolve(p.resolved_action_topic)
        self.pose_topics = {node.resolve(f"sim/objects/{name}/pose"): name for name in self.objects}
        self.target_topic = node.resolve("sim/target_slot")
        topics: dict[str, str] = {
            self.joint_states_topic: JOINT_STATE,
            node.resolve("joint_commands"): JOINT_STATE,
            node.resolve("leader/joint_states"): JOINT_STATE,
            self.action_topic: JOINT_STATE,
            node.resolve("/clock"): "rosgraph_msgs/msg/Clock",
            self.target_topic: TARGET,
            **dict.fromkeys(self.pose_topics, POSE),
        }
        if p.images:
            for cam in CAMERA_NAMES:
                base = node.resolve(f"cameras/{cam}")
                topics[f"{base}/image_raw"] = "sensor_msgs/msg/Image"
                topics[f"{base}/camera_info"] = "sensor_msgs/msg/CameraInfo"
                topics[f"{base}/depth/image_raw"] = "sensor_msgs/msg/Image"
                topics[f"{base}/depth/camera_info"] = "sensor_msgs/msg/CameraInfo"
        self.topics = topics
        for topic, type_name in topics.items():
            node.create_subscription(type_name, topic, functools.partial(self.on_raw, topic), RECORD_QOS, raw=True)
        expert = p.expert.strip("/")
        self.commander = EpisodeCommander(
            node,
            expert if p.mode == "scripted" else None,
            reset=p.reset_sim,
            timeout_s=p.service_timeout_s,
            cancelled=self._stop.is_set,
        )
        if p.mode == "scripted":
            node.create_subscription("std_msgs/msg/Bool", f"{expert}/done", self.on_expert_done, QoS(depth=10))
        node.create_service("std_srvs/srv/Trigger", "~/next_episode", self.on_next_episode)
        node.create_service("std_srvs/srv/Trigger", "~/stop", self.on_stop)
        self._thread = threading.Thread(target=self._run, name="seed-recorder", daemon=True)
        self._thread.start()
        node.logger.info(
            f"recording {p.mode} seeds to {self.output} (actions from {self.action_topic}, "
            f"{p.episodes or 'unlimited'} episodes from seed {p.seed})"
        )

    # ------------------------------------------------------------------ services
    def on_next_episode(self, request: Any, response: Any) -> Any:
        """``~/next_episode``: end the current episode (saved) and start the next."""
        with self._lock:
            active = self._episode is not None
            if active:
                self._end_request = "next_episode"
        self._wake.set()
        response.success = active
        response.message = "episode ended" if active else "no episode is being recorded"
        return response

    def on_stop(self, request: Any, response: Any) -> Any:
        """``~/stop``: end the current episode (saved) and stop recording."""
        with self._lock:
            self._end_request = "stop"
        self._stop.set()
        self._wake.set()
        response.success, response.message = True, "stopping"
        return response

    # ------------------------------------------------------------------ messages
    def on_expert_done(self, msg: Any) -> None:
        with self._lock:
            self._expert_done = bool(msg.data)

    def on_raw(self, topic: str, raw: tuple[bytes, Any]) -> None:
        """Every recorded topic: into the episode's bag; the state, action and pose topics are also decoded."""
        cdr, info = raw
        sent_ns = getattr(info, "source_timestamp_ns", None)
        with self._lock:
            old_scene = sent_ns is not None and sent_ns < self._scene_since_ns
            episode = None if old_scene else self._episode
            if episode is not None:
                if topic not in episode.registered:
                    episode.bag.add_topic(topic, self.topics[topic])
                    episode.registered.add(topic)
                episode.bag.write(topic, self.node.now_ns(), cdr)
        try:
            if topic == self.joint_states_topic:
                self._on_state(deserialize(cdr, JOINT_STATE), episode)
            elif topic == self.action_topic:
                self._on_action(deserialize(cdr, JOINT_STATE))
            elif topic == self.target_topic:
                slot = int(deserialize(cdr, TARGET).data)
                with self._lock:
                    if not old_scene:
                        self.target_slot = slot
            elif topic in self.pose_topics and not old_scene:
                msg = deserialize(cdr, POSE)
                p, o = msg.pose.position, msg.pose.orientation
                pose = np.array([p.x, p.y, p.z, o.w, o.x, o.y, o.z], dtype=np.float64)
                with self._lock:
                    self._history.add_pose(self.pose_topics[topic], to_ns(msg.header.stamp), pose)
        except (MessageError, ValueError) as exc:
            self.node.logger.warning(f"ignored a message on {topic}: {exc}")

    def _on_action(self, msg: Any) -> None:
        latest = self._history.latest_action
        action = _joint_vector(msg, latest if latest is not None else self._q)
        with self._lock:
            self._history.add_action(to_ns(msg.header.stamp), action)
            if self._episode is not None:
                self._episode.has_action = True

    def _on_state(self, msg: Any, episode: _Episode | None) -> None:
        """A new step of ``episode`` (the one whose bag got this message; None: not recording)."""
        q = _joint_vector(msg, self._q)
        self._q = q
        with self._lock:
            self.states_seen += 1
            if episode is None or episode is not self._episode:
                return
            if episode.add_state(to_ns(msg.header.stamp), q, self._history):
                self._judge(episode)
        self._wake.set()

    def _judge(self, ep: _Episode) -> None:
        """Success and the expert's progress after ``ep`` got a step (caller holds the lock)."""
        if len(ep.poses) == len(self.objects):
            held = bool(ep.q[-1][GRIPPER_INDEX] < self.params.held_gripper_max_rad)
            target = self.target_slot
            ep.target_slot = target
            standing = prefilled_before(self.task, target) if target is not None else ()
            poses = {name: (ep.latest_pose(name)[:3], ep.latest_pose(name)[3:]) for name in self.objects}
            pairs = list(zip(standing_names(len(standing)), standing, strict=True))
            targets = () if target is None else (target,)
            ep.success = ep.detector.update_state(TaskState.of(poses, (VIAL,), (held,), targets, pairs))
        ep.expert_done = ep.expert_done or self._expert_done
        if ep.expert_done:
            ep.steps_since_done += 1

    # ------------------------------------------------------------------ episodes
    def _run(self) -> None:
        try:
            self._record_episodes()
        except Exception as exc:
            if not self._stop.is_set():
                self.error = f"{type(exc).__name__}: {exc}"
                self.node.logger.error(f"seed recording failed: {self.error}")
        finally:
            if self.params.exit_when_done:
                request = getattr(self.node, "request_shutdown", None)
                if callable(request):
                    request()

    def _wait_for_graph(self) -> bool:
        """Wait for the services and the first state (RuntimeError naming what is missing); False if stopped."""
        timeout = self.params.service_timeout_s
        scripted = self.params.mode == "scripted"
        try:
            self.commander.wait_for_services(timeout, reset=scripted)  # teleop: a sim is optional (below)
        except EpisodeCommandError as exc:
            hint = "is the sim running?" if exc.service == RESET_SERVICE else "is the expert up?"
            raise RuntimeError(f"{exc}: {hint}") from exc
        deadline = time.monotonic() + timeout
        while self.states_seen == 0:
            if self._stop.is_set():
                return False
            if time.monotonic() > deadline:
                raise RuntimeError(f"no message on {self.joint_states_topic} after {timeout:g} s")
            time.sleep(0.05)
        if not scripted and self.commander.resets:
            try:
                self.commander.wait_for_services(2.0)
            except EpisodeCommandError:
                self.node.logger.info("no sim/reset service: recording without resets (real arm)")
                self.commander.drop_reset()
        return True

    def _first_index(self) -> int:
        """The first episode without a seed file (earlier ones are kept: resume)."""
        index = 0
        while (self.output / f"{seed_name(index)}.npz").exists():
            index += 1
        return index

    def _record_episodes(self) -> None:
        p = self.params
        if not self._wait_for_graph():
            return
        index = self._first_index()
        if index:
            self.node.logger.info(f"{index} seed file(s) already in {self.output}: resuming at episode {index}")
        while not self._stop.is_set() and (p.episodes == 0 or index < p.episodes):
            tries = 1
            result = self._record_one(index, tries)
            while p.mode == "scripted" and result is not None and self._failed_try(result, tries):
                tries += 1
                result = self._record_one(index, tries)
            index += 1
        self.node.logger.info(f"recorded {len(self.results)} episode(s) to {self.output}")

    def _failed_try(self, result: EpisodeResult, tries: int) -> bool:
        """Whether scripted episode ``result`` (try ``tries``) failed with tries left: its files then move to
        ``failed/`` and the episode is recorded again."""
        if result.success or result.seed_file is None or tries > self.params.retries or self._stop.is_set():
            return False
        failed = self.output / FAILED_DIR
        failed.mkdir(exist_ok=True)
        name = f"{seed_name(result.index)}_try_{tries}"
        result.seed_file.replace(failed / f"{name}.npz")
        if result.bag.exists():
            shutil.rmtree(failed / name, ignore_errors=True)
            result.bag.replace(failed / name)
        self.node.logger.warning(
            f"episode {result.index}: no success ({result.end_reason}); recording it again "
            f"(try {tries + 1} of {self.params.retries + 1}; the failed try is in {failed / name})"
        )
        return True

    def _record_one(self, index: int, tries: int = 1) -> EpisodeResult | None:
        p = self.params
        seed = p.seed + index if self.commander.resets else None
        if self.commander.agent is not None:  # an expert still running (episode ended at max_steps) stops first
            self.commander.stop()
        if seed is not None:
            self.commander.reset(seed)
            with self._lock:
                self._scene_since_ns = time.time_ns()
                self.target_slot = None
        bag_dir = self.output / seed_name(index)
        if bag_dir.exists():  # left by an interrupted run (no seed file): record it again
            shutil.rmtree(bag_dir)
        bag = BagWriter(bag_dir, custom_data={"seed": str(seed), "source": p.mode, "episode": str(index)}).open()
        detector = SuccessDetector(self.task, self.rack)
        with self._lock:
            self._expert_done = False
            self._end_request = None
            if p.mode == "scripted":
                self._history.latest_action = None
            self._episode = _Episode(index=index, seed=seed, period_ns=self.period_ns, bag=bag, detector=detector)
            self._episode.has_action = self._history.latest_action is not None
        if self.commander.agent is not None:
            self.commander.start()
        self.node.logger.info(f"episode {index}: recording (seed {seed})")
        reason = self._wait_for_end()
        return self._end_episode(reason, tries)

    def _wait_for_end(self) -> str:
        """Until the episode ends (woken by each state and service call); why it ended."""
        reason: str | None = None

        def ended() -> bool:
            nonlocal reason
            reason = self._end_reason()
            return reason is not None

        self.commander.until(ended, math.inf, poll_s=0.1, wake=self._wake)
        return reason or "stop"

    def _end_reason(self) -> str | None:
        """Why the episode ended, or None while it goes on."""
        p = self.params
        with self._lock:
            ep = self._episode
            if ep is None:
                return "stopped"
            if self._end_request is not None:
                return self._end_request
            steps = len(ep.t_ns)
            if p.mode == "scripted" and ep.expert_done and ep.success:
                return "success"
            if ep.expert_done and ep.steps_since_done >= p.done_steps:
                return "expert_done"
            if self.max_steps and steps >= self.max_steps:
                return "max_steps"
            if time.monotonic() - ep.start_wall > p.episode_timeout_s:
                return "timeout"
        return "stop" if self._stop.is_set() else None

    def _end_episode(self, reason: str, tries: int = 1) -> EpisodeResult | None:
        """Close the episode's bag and write its seed file (teleop: also when interrupted)."""
        with self._lock:
            ep = self._episode
            self._episode = None
            if ep is None:
                return None
            if ep.flush(self._history):
                self._judge(ep)
        ep.bag.close()
        operator = reason in ("next_episode", "stop", "shutdown")
        steps = ep.steps
        seed_file: Path | None = None
        has_poses = ep.has_poses(self.objects)
        judged, scene = "detector_any_slot", {}
        if ep.target_slot is not None:
            judged = "detector"
            scene = {"target_slot": ep.target_slot, "prefilled": list(prefilled_before(self.task, ep.target_slot))}
        success = ep.success if has_poses else operator
        keep = steps > 0 and (self.params.mode == "teleop" or reason not in ("shutdown", "stop"))
        duration = (ep.t_ns[-1] - ep.t_ns[0]) * 1e-9 if steps else 0.0
        if keep:
            demo = ep.to_seed_demo(
                success=bool(success),
                source=self.params.mode,
                control_hz=self.control_hz,
                with_poses=has_poses,
                extra={
                    "episode": ep.index,
                    "tries": tries,
                    "bag": ep.bag.path.name,
                    "end_reason": reason,
                    "duration_s": duration,
                    "wall_s": time.monotonic() - ep.start_wall,
                    "lead_steps": ep.lead_steps,
                    "unmatched_actions": ep.unmatched_actions,
                    "action_topic": self.action_topic,
                    "success_source": judged if has_poses else "operator",
                    **scene,
                },
            )
            seed_file = save_seed(demo, self.output / f"{seed_name(ep.index)}.npz")
        result = EpisodeResult(ep.index, ep.seed, steps, duration, bool(success), reason, seed_file, ep.bag.path)
        self.results.append(result)
        self.node.logger.info(
            f"episode {ep.index}: {steps} steps, {duration:.1f} s, success {str(bool(success)).lower()} "
            f"({reason})" + (f" -> {seed_file}" if seed_file else " (not saved)")
        )
        return result

    def close(self) -> None:
        """Stop recording; an episode in progress is saved in teleop mode (scripted: recorded again on resume)."""
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=self.params.service_timeout_s + 5.0)
        self._end_episode("shutdown")
        if self.error is not None:
            raise RuntimeError(f"seed recording failed: {self.error}")  # run_node: exit status 1


def main(args: list[str] | None = None) -> int:
    from nodegraph.transport.runtime import run_node

    return run_node(SeedRecorder, "seed_recorder", args)


if __name__ == "__main__":
    raise SystemExit(main())
