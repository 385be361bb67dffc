"""Drive the episodes of a graph from one node: reset the sim on a seed, start and stop the agent, wait for an end.

The episode loops of the evaluator (the policy node as agent) and of the seed recorder (the scripted expert as
agent) run on it, as a program drives nav2 through its simple commander. The services (the names resolve on the
commander's node):

- ``sim/reset`` (``so101_msgs/srv/ResetSim``): a new scene from ``seed`` (same seed, same scene);
- ``<agent>/start``, ``<agent>/stop`` (``std_srvs/srv/Trigger``): the agent commands the arm, or stops.

A call that gets no answer is sent again until ``timeout_s`` has passed (a service just discovered may miss its
first query: its liveliness can arrive before its queryable is routed); each try waits at most ``attempt_s``.
Every failure raises :class:`EpisodeCommandError` naming the service.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import Any

from nodegraph.graph.api import Client, Node, ServiceTimeout

RESET_SERVICE = "sim/reset"
RESET_TYPE = "so101_msgs/srv/ResetSim"
TRIGGER_TYPE = "std_srvs/srv/Trigger"
RETRY_PAUSE_S = 0.1
"""Seconds between two tries of a call that got no answer."""


class EpisodeCommandError(RuntimeError):
    """A service of the episode did not appear, did not answer in time, or answered with ``success`` false;
    ``service`` names it."""

    def __init__(self, service: str, message: str) -> None:
        super().__init__(message)
        self.service = service


class EpisodeCommander:
    """``reset(seed)``, ``start()``, ``stop()`` and ``until(done, timeout_s)`` over ``node``'s service clients.

    ``agent``: the node whose ``~/start`` and ``~/stop`` the commander calls (None: none, e.g. teleoperation);
    ``reset``: False where there is no sim to reset (a real arm). ``timeout_s``: seconds a call may take in all,
    ``attempt_s``: seconds one try waits (default ``timeout_s``). ``cancelled``: while it returns True, no call is
    tried again and :meth:`until` returns False.
    """

    def __init__(
        self,
        node: Node,
        agent: str | None,
        *,
        reset: bool = True,
        timeout_s: float = 30.0,
        attempt_s: float | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> None:
        self.node = node
        self.timeout_s = timeout_s
        self.attempt_s = timeout_s if attempt_s is None else attempt_s
        self._cancelled = cancelled or (lambda: False)
        self._reset: Client | None = node.create_client(RESET_TYPE, RESET_SERVICE) if reset else None
        self.agent = agent.strip("/") if agent is not None else None
        self._start: Client | None = None
        self._stop: Client | None = None
        if self.agent is not None:
            self._start = node.create_client(TRIGGER_TYPE, f"{self.agent}/start")
            self._stop = node.create_client(TRIGGER_TYPE, f"{self.agent}/stop")

    @property
    def resets(self) -> bool:
        """Whether :meth:`reset` calls a sim (False after :meth:`drop_reset`, or built with ``reset=False``)."""
        return self._reset is not None

    def drop_reset(self) -> None:
        """Episodes without resets from now on (the sim is not there: a real arm)."""
        self._reset = None

    def services(self) -> list[tuple[str, Client]]:
        """``(name, client)`` of the services this commander calls, the reset first."""
        out = [(RESET_SERVICE, self._reset)] if self._reset is not None else []
        if self.agent is not None and self._start is not None and self._stop is not None:
            out += [(f"{self.agent}/start", self._start), (f"{self.agent}/stop", self._stop)]
        return out

    def wait_for_services(self, timeout_s: float, *, reset: bool = True) -> None:
        """Until each service is on the graph (``reset`` False: the agent's only); EpisodeCommandError naming the
        first one missing after ``timeout_s`` seconds."""
        for name, client in self.services():
            if name == RESET_SERVICE and not reset:
                continue
            if not client.wait_for_service(timeout_s):
                raise EpisodeCommandError(name, f"no {name} service after {timeout_s:g} s")

    def reset(self, seed: int) -> Any:
        """A new scene from ``seed`` (< 0: the sim draws one); the ResetSim response."""
        if self._reset is None:
            raise EpisodeCommandError(RESET_SERVICE, f"no {RESET_SERVICE}: this commander does not reset")
        request = self.node.message(f"{RESET_TYPE}_Request", seed=seed)
        return self._call(self._reset, request, RESET_SERVICE, f" with seed {seed}")

    def start(self) -> Any:
        """``<agent>/start``: the agent commands the arm; the Trigger response."""
        return self._trigger(self._start, "start")

    def stop(self) -> Any:
        """``<agent>/stop``: the agent stops commanding; the Trigger response."""
        return self._trigger(self._stop, "stop")

    def until(
        self, done: Callable[[], bool], timeout_s: float, poll_s: float = 0.02, wake: threading.Event | None = None
    ) -> bool:
        """Call ``done`` every ``poll_s`` seconds (sooner when ``wake`` is set; it is cleared) until it returns
        True (then True), ``timeout_s`` seconds have passed (``math.inf``: no limit) or the commander is
        cancelled (then False)."""
        deadline = time.monotonic() + timeout_s if math.isfinite(timeout_s) else math.inf
        while True:
            if done():
                return True
            if time.monotonic() >= deadline or self._cancelled():
                return False
            if wake is None:
                time.sleep(poll_s)
            else:
                wake.wait(poll_s)
                wake.clear()

    def _trigger(self, client: Client | None, verb: str) -> Any:
        if client is None or self.agent is None:
            raise EpisodeCommandError(verb, f"no agent to {verb}: this commander has none")
        return self._call(client, self.node.message(f"{TRIGGER_TYPE}_Request"), f"{self.agent}/{verb}")

    def _call(self, client: Client, request: Any, name: str, what: str = "") -> Any:
        deadline = time.monotonic() + self.timeout_s
        while True:
            left = deadline - time.monotonic()
            try:
                response = client.call(request, max(0.1, min(self.attempt_s, left)))
                break
            except ServiceTimeout:
                if time.monotonic() + RETRY_PAUSE_S >= deadline or self._cancelled():
                    raise EpisodeCommandError(name, f"{name}{what}: no answer within {self.timeout_s:g} s") from None
                self.node.logger.debug(f"{name} did not answer yet; trying again")
                time.sleep(RETRY_PAUSE_S)
        if not response.success:
            raise EpisodeCommandError(name, f"{name}{what} failed: {response.message}")
        return response
