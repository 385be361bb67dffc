"""The episode commander against a test peer on a real zenoh router: a sim's reset, an agent's start/stop, and
services that refuse, never answer or are not there."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from nodegraph.graph.api import Node
from nodegraph.testing.graph import GraphBackend, graph_backend_for
from so101_nodes.episode_commander import EpisodeCommander, EpisodeCommandError


class Peer:
    """``sim/reset`` and ``agent/start``/``agent/stop`` on a node of its own; ``refuse`` makes start answer
    success false; the reset of seed 13 never answers (until the test ends)."""

    def __init__(self, node: Node) -> None:
        self.calls: list[str] = []
        self.refuse = False
        self.release = threading.Event()
        node.create_service("so101_msgs/srv/ResetSim", "sim/reset", self.on_reset)
        node.create_service("std_srvs/srv/Trigger", "agent/start", self.on_start)
        node.create_service("std_srvs/srv/Trigger", "agent/stop", self.on_stop)

    def on_reset(self, request: Any, response: Any) -> Any:
        if request.seed == 13:
            self.release.wait(30.0)
        self.calls.append(f"reset {request.seed}")
        response.success, response.message = True, f"seed {request.seed}"
        return response

    def on_start(self, request: Any, response: Any) -> Any:
        self.calls.append("start")
        response.success, response.message = not self.refuse, "refused" if self.refuse else "started"
        return response

    def on_stop(self, request: Any, response: Any) -> Any:
        self.calls.append("stop")
        response.success, response.message = True, "stopped"
        return response


@pytest.fixture(scope="module")
def backend() -> Iterator[GraphBackend]:
    with graph_backend_for("zenoh") as graph:
        yield graph


@pytest.fixture(scope="module")
def peer(backend: GraphBackend) -> Iterator[Peer]:
    peer = Peer(backend.node("peer"))
    yield peer
    peer.release.set()


def test_an_episode_calls_the_services_in_order(backend: GraphBackend, peer: Peer) -> None:
    commander = EpisodeCommander(backend.node("commander"), "agent", timeout_s=10.0)
    commander.wait_for_services(20.0)
    peer.calls.clear()
    commander.stop()
    assert commander.reset(7).message == "seed 7"
    commander.start()
    ticks = iter(range(100))
    assert commander.until(lambda: next(ticks) >= 3, 5.0)
    commander.stop()
    assert peer.calls == ["stop", "reset 7", "start", "stop"]


def test_a_refusal_names_the_service(backend: GraphBackend, peer: Peer) -> None:
    commander = EpisodeCommander(backend.node("refused"), "/agent", timeout_s=10.0)
    commander.wait_for_services(20.0)
    peer.refuse = True
    try:
        with pytest.raises(EpisodeCommandError, match=r"^agent/start failed: refused$") as caught:
            commander.start()
    finally:
        peer.refuse = False
    assert caught.value.service == "agent/start"


def test_a_service_that_never_answers_fails_within_the_timeout(backend: GraphBackend, peer: Peer) -> None:
    commander = EpisodeCommander(backend.node("impatient"), "agent", timeout_s=1.5, attempt_s=0.5)
    commander.wait_for_services(20.0)
    start = time.monotonic()
    with pytest.raises(EpisodeCommandError, match=r"^sim/reset with seed 13: no answer within 1\.5 s$") as caught:
        commander.reset(13)
    assert caught.value.service == "sim/reset"
    assert 1.4 <= time.monotonic() - start < 4.0


def test_a_missing_service_is_named(backend: GraphBackend, peer: Peer) -> None:
    commander = EpisodeCommander(backend.node("lonely"), "nobody")
    with pytest.raises(EpisodeCommandError, match=r"^no nobody/start service after 0\.5 s$"):
        commander.wait_for_services(0.5)
    commander.drop_reset()
    assert not commander.resets
    with pytest.raises(EpisodeCommandError, match="does not reset"):
        commander.reset(1)


def test_until_gives_up_at_the_timeout_or_when_cancelled(backend: GraphBackend) -> None:
    commander = EpisodeCommander(backend.node("waiter"), None, reset=False)
    start = time.monotonic()
    assert not commander.until(lambda: False, 0.3)
    assert 0.3 <= time.monotonic() - start < 1.5
    stopped = threading.Event()
    stopped.set()
    cancelled = EpisodeCommander(backend.node("cancelled"), None, reset=False, cancelled=stopped.is_set)
    assert not cancelled.until(lambda: False, 60.0)
    with pytest.raises(EpisodeCommandError, match="no agent to start"):
        cancelled.start()
