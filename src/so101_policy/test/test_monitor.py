"""The evaluation monitor judges an episode from the graph's messages with the shared success rules: the vial
must stand in the episode's target slot (the first free slot of fill_order), the pre-filled vials must stay."""

from __future__ import annotations

import contextlib

import numpy as np
from nodegraph.testing import graph as graph_testing
from nodegraph.testing import wait_until
from nodegraph.transport.zenoh.context import Context
from nodegraph.transport.zenoh.node import ZenohNode
from nodegraph.transport.zenoh.router import RouterProcess
from so101_core.sim.task import slot_centres
from so101_core.sim.twin import Twin

endpoint = graph_testing.endpoint
router = graph_testing.router
UPRIGHT = (1.0, 0.0, 0.0, 0.0)
LYING = (0.7071068, 0.0, 0.7071068, 0.0)


def test_the_monitor_judges_the_target_slot_and_the_standing_vials(
    router: RouterProcess, stack: contextlib.ExitStack
) -> None:
    from so101_nodes.sim_node import SimNode
    from so101_policy.monitor import EpisodeMonitor

    ctxs = [Context(router.endpoint) for _ in range(2)]
    for ctx in ctxs:
        stack.callback(ctx.close)
        assert ctx.wait_for_router(10.0)
    sim_node = ZenohNode("sim", args=[], context=ctxs[0], parameter_overrides={"cameras": [], "real_time_factor": 2.0})
    sim = SimNode(sim_node)  # domain randomization on: seed 1 stands vials in slots 8 and 6, the target is 4
    stack.callback(sim.close)
    stack.callback(sim_node.shutdown)
    node = ZenohNode("evaluator", args=[], context=ctxs[1])
    stack.callback(node.shutdown)
    twin = Twin()  # the sim's config and DR: the same episode from the same seed
    stack.callback(twin.close)
    monitor = EpisodeMonitor(node, twin, None)
    reset = node.create_client("so101_msgs/srv/ResetSim", "sim/reset")
    place = node.create_client("so101_msgs/srv/SetObjectPose", "sim/set_object_pose")
    assert reset.wait_for_service(10.0) and place.wait_for_service(10.0)
    assert reset.call(node.message("so101_msgs/srv/ResetSim_Request", seed=1), 10.0).success
    episode = sim.twin.episode
    assert episode is not None and episode.prefilled == (8, 6) and episode.target_slot == 4
    rack = sim.twin.object_poses()["rack"]
    centres = slot_centres(rack.position, rack.quaternion, sim.twin.config.rack)
    z = sim.twin.config.rack.base_height + sim.twin.config.vial.half_length

    def put(name: str, xyz: tuple[float, float, float], quat: tuple[float, float, float, float]) -> None:
        pose = node.message(
            "geometry_msgs/msg/Pose",
            position=node.message("geometry_msgs/msg/Point", x=xyz[0], y=xyz[1], z=xyz[2]),
            orientation=node.message("geometry_msgs/msg/Quaternion", w=quat[0], x=quat[1], y=quat[2], z=quat[3]),
        )
        assert place.call(node.message("so101_msgs/srv/SetObjectPose_Request", name=name, pose=pose), 10.0).success

    def judged(seconds: float = 1.5) -> bool:
        """Our detector's verdict over ``seconds`` of sim time from now (a fresh episode log)."""
        monitor.begin(1, record_frames=False)
        wait_until(lambda: monitor.progress()[0] >= seconds, 60.0, f"{seconds} s of sim time")
        log = monitor.end()
        assert log.target_slot == 4 and log.prefilled == (8, 6) and log.arrays()["standing"].shape[1:] == (2, 7)
        return log.success_step >= 0

    put("vial", (*centres[4], z), UPRIGHT)
    assert judged(), "upright in the target slot"
    put("vial", (*centres[0], z), UPRIGHT)
    assert not judged(), "upright in a free slot that is not the target"
    put("vial", (*centres[4], z), UPRIGHT)
    put("standing_vial_0", (0.35, 0.1, 0.01), LYING)
    assert not judged(), "a standing vial knocked out of its slot"
    assert np.isfinite(monitor.steps_seen) and monitor.steps_seen > 0
