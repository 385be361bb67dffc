"""Publishers, subscriptions, service servers and clients over zenoh, laid out as rmw_zenoh_cpp does.

Each entity declares its liveliness token, and its GID is derived from that token. Incoming samples and
queries are queued on the owning node's executor (``Dispatcher``); user callbacks never run on zenoh threads.
"""

from __future__ import annotations

import collections
import itertools
import threading
import time
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import zenoh
import zenoh.ext

from nodegraph.graph.api import ServiceTimeout
from nodegraph.graph.qos import QoS
from nodegraph.interfaces import InterfaceInfo, interface_info
from nodegraph.interfaces.messages import MessageError, deserialize, make, serialize
from nodegraph.transport.zenoh.attachment import Attachment, AttachmentError
from nodegraph.transport.zenoh.keyexpr import EndpointToken, EntityKind, data_key, gid

if TYPE_CHECKING:
    from nodegraph.transport.zenoh.node import ZenohNode


class Dispatchable(Protocol):
    def dispatch(self) -> None: ...


class Entity:
    """Common part: resolved name, type, token, GID, and the owning node.

    Each subclass declares its data-plane entity first and then calls ``announce()``: a peer that sees the
    liveliness token (``wait_for_service``, graph queries) can then rely on the publisher/queryable being routed."""

    def __init__(self, node: ZenohNode, kind: EntityKind, name: str, info: InterfaceInfo, qos: QoS) -> None:
        self.node = node
        self.name = name
        self.info = info
        self.qos = qos
        ctx = node.context
        self.key = data_key(ctx.domain_id, name, info.dds_name, info.type_hash)
        node.used_types[info.name] = info.type_hash
        token = EndpointToken(node.token, ctx.next_entity_id(), kind, name, info.dds_name, info.type_hash, qos)
        self.token_key = token.key()
        self.gid = gid(self.token_key)
        self._token: Any = None
        self._sequence = itertools.count(1)

    def announce(self) -> None:
        """Declare the liveliness token: the entity becomes visible in the graph."""
        self._token = self.node.context.session.liveliness().declare_token(self.token_key)

    def attachment(self, sequence: int | None = None, gid_: bytes | None = None) -> bytes:
        seq = next(self._sequence) if sequence is None else sequence
        return Attachment(seq, time.time_ns(), gid_ or self.gid).encode()

    def close(self) -> None:
        if self._token is not None:
            self._token.undeclare()


class ZenohPublisher(Entity):
    def __init__(self, node: ZenohNode, type_name: str, topic: str, qos: QoS) -> None:
        super().__init__(node, "MP", topic, interface_info(type_name), qos)
        self.topic = topic
        self.type_name = self.info.name
        reliability = zenoh.Reliability.RELIABLE if qos.reliability == "reliable" else zenoh.Reliability.BEST_EFFORT
        blocking = qos.history == "keep_all" and qos.reliability == "reliable"
        congestion = zenoh.CongestionControl.BLOCK if blocking else zenoh.CongestionControl.DROP
        session = node.context.session
        if qos.durability == "transient_local":
            self._publisher: Any = zenoh.ext.declare_advanced_publisher(
                session,
                self.key,
                congestion_control=congestion,
                reliability=reliability,
                cache=zenoh.ext.CacheConfig(max(qos.depth, 1)),
                publisher_detection=True,
            )
        else:
            self._publisher = session.declare_publisher(
                self.key, congestion_control=congestion, reliability=reliability
            )
        self.announce()

    def publish(self, msg: Any) -> None:
        self.publish_raw(serialize(msg, self.type_name))

    def publish_raw(self, cdr: bytes) -> None:
        """Publish an already serialized message (CDR with its 4-byte header)."""
        self._publisher.put(cdr, attachment=self.attachment())

    def close(self) -> None:
        self._publisher.undeclare()
        super().close()


class ZenohSubscription(Entity):
    """Keeps the last ``depth`` samples (KEEP_LAST) until the executor takes them."""

    def __init__(
        self,
        node: ZenohNode,
        type_name: str,
        topic: str,
        callback: Callable[[Any], None],
        qos: QoS,
        raw: bool = False,
    ) -> None:
        super().__init__(node, "MS", topic, interface_info(type_name), qos)
        self.topic = topic
        self.type_name = self.info.name
        self._callback = callback
        self._raw = raw
        depth = qos.depth if qos.history == "keep_last" and qos.depth > 0 else None
        self._pending: collections.deque[zenoh.Sample] = collections.deque(maxlen=depth)
        self._lock = threading.Lock()
        self.received = 0
        self.overwritten = 0
        session = node.context.session
        if qos.durability == "transient_local":
            self._subscriber: Any = zenoh.ext.declare_advanced_subscriber(
                session,
                self.key,
                self._on_sample,
                history=zenoh.ext.HistoryConfig(detect_late_publishers=True, max_samples=max(qos.depth, 1)),
                subscriber_detection=True,
            )
        else:
            self._subscriber = session.declare_subscriber(self.key, self._on_sample)
        self.announce()

    def _on_sample(self, sample: zenoh.Sample) -> None:
        with self._lock:
            if self._pending.maxlen is not None and len(self._pending) == self._pending.maxlen:
                self.overwritten += 1
            self._pending.append(sample)
        self.node.executor.notify(self)

    def dispatch(self) -> None:
        with self._lock:
            if not self._pending:
                return
            sample = self._pending.popleft()
        self.received += 1
        raw_attachment = sample.attachment
        try:
            attachment = Attachment.decode(raw_attachment.to_bytes() if raw_attachment is not None else None)
        except AttachmentError as exc:
            self.node.logger.warning(f"{self.topic}: dropped a sample: {exc}")
            return
        payload = sample.payload.to_bytes()
        if self._raw:
            self._callback((payload, attachment))
            return
        try:
            msg = deserialize(payload, self.type_name)
        except MessageError as exc:
            self.node.logger.error(f"{self.topic}: {exc}")
            return
        self._callback(msg)

    def close(self) -> None:
        self._subscriber.undeclare()
        super().close()


class ZenohService(Entity):
    """Service server: a complete queryable; the callback takes (request, response) and returns the response."""

    def __init__(
        self, node: ZenohNode, type_name: str, name: str, callback: Callable[[Any, Any], Any], qos: QoS
    ) -> None:
        super().__init__(node, "SS", name, interface_info(type_name), qos)
        if not self.info.is_service:
            raise MessageError(f"{type_name} is not a service type")
        self._callback = callback
        self._pending: collections.deque[zenoh.Query] = collections.deque()
        self._lock = threading.Lock()
        self._queryable = node.context.session.declare_queryable(self.key, self._on_query, complete=True)
        self.announce()

    def _on_query(self, query: zenoh.Query) -> None:
        with self._lock:
            self._pending.append(query)
        self.node.executor.notify(self)

    def dispatch(self) -> None:
        with self._lock:
            if not self._pending:
                return
            query = self._pending.popleft()
        self.handle(query, self._callback)

    @property
    def pending(self) -> int:
        """Requests received and not yet handed to the callback (the executor's queue)."""
        with self._lock:
            return len(self._pending)

    def handle(self, query: zenoh.Query, callback: Callable[[Any, Any], Any]) -> None:
        """Decode ``query``, run ``callback`` and reply; a raising callback is logged and answered with the
        default response; an undecodable request is logged and dropped (the client then times out)."""
        try:
            raw = query.attachment
            request_attachment = Attachment.decode(raw.to_bytes() if raw is not None else None)
            payload = query.payload.to_bytes() if query.payload is not None else b""
            request = deserialize(payload, self.info.part("Request"))
        except (AttachmentError, MessageError) as exc:
            self.node.logger.error(f"{self.name}: bad request: {exc}")
            query.drop()
            return
        try:
            response = callback(request, make(self.info.part("Response")))
        except Exception:
            # as rclpy's backend does: log the exception and answer, so the client does not wait out its timeout
            self.node.logger.error(
                f"{self.name}: service callback raised; answering the default response\n{traceback.format_exc()}"
            )
            response = make(self.info.part("Response"))
        try:
            self.reply(query, request_attachment, response)
        except MessageError as exc:  # the callback's response does not serialize: say so, answer the default
            self.node.logger.error(f"{self.name}: bad response from the service callback: {exc}")
            self.reply(query, request_attachment, make(self.info.part("Response")))

    def reply(self, query: zenoh.Query, request_attachment: Attachment, response: Any) -> None:
        attachment = self.attachment(request_attachment.sequence_number, request_attachment.gid)
        query.reply(self.key, serialize(response, self.info.part("Response")), attachment=attachment)
        query.drop()

    def close(self) -> None:
        self._queryable.undeclare()
        super().close()


class ZenohClient(Entity):
    """Service client: one ``get`` per call, matched by sequence number."""

    def __init__(self, node: ZenohNode, type_name: str, name: str, qos: QoS) -> None:
        super().__init__(node, "SC", name, interface_info(type_name), qos)
        if not self.info.is_service:
            raise MessageError(f"{type_name} is not a service type")
        self.announce()

    def wait_for_service(self, timeout_s: float) -> bool:
        def has_server(tokens: list[Any]) -> bool:
            return any(t.kind == "SS" and t.name == self.name and t.dds_type == self.info.dds_name for t in tokens)

        return self.node.context.graph.wait_for(has_server, timeout_s)

    def call(self, request: Any, timeout_s: float = 10.0) -> Any:
        sequence = next(self._sequence)
        replies = self.node.context.session.get(
            self.key,
            payload=serialize(request, self.info.part("Request")),
            attachment=self.attachment(sequence),
            target=zenoh.QueryTarget.ALL_COMPLETE,
            consolidation=zenoh.ConsolidationMode.NONE,
            timeout=timeout_s,
        )
        for reply in replies:
            if reply.ok is None:
                continue
            sample = reply.ok
            try:
                raw = sample.attachment
                attachment = Attachment.decode(raw.to_bytes() if raw is not None else None)
            except AttachmentError:
                continue
            if attachment.sequence_number != sequence:
                continue
            return deserialize(sample.payload.to_bytes(), self.info.part("Response"))
        raise ServiceTimeout(f"service {self.name} did not answer within {timeout_s} s")


class ZenohTimer:
    """A periodic callback, run by the node's executor.

    On wall time (``clock`` None) it is due every ``period_s`` seconds of ``time.monotonic()``. On ROS time
    (``clock``: the node's ``/clock`` reading in ns, None before the first message) it is due once ROS time has
    advanced by ``period_s`` since its last firing, as rclpy's timers under ``use_sim_time``: it never fires
    before the first ``/clock`` message (its schedule starts at the first reading it sees), a clock that jumps
    back before its last firing (a sim reset) restarts its schedule from there, and a timer that fell behind
    (a large forward jump, a slow callback) fires once and keeps its phase, never a burst.

    ROS time advances in steps (the twin publishes ``/clock`` once per control step, of 32 or 34 ms at 30 Hz), so
    a due time falls between two readings: the timer fires on the reading nearest it, at most half a clock step
    (and half a period) early. Firing only on the first reading at or after it would alias: a 30 Hz timer on
    that clock would fire on 2 of every 3 steps.
    """

    def __init__(
        self, period_s: float, callback: Callable[[], None], clock: Callable[[], int | None] | None = None
    ) -> None:
        if period_s <= 0:
            raise ValueError(f"timer period must be > 0 s, got {period_s}")
        self.period_s = period_s
        self.callback = callback
        self.clock = clock
        self.cancelled = False
        self.next_due = time.monotonic() + period_s
        """Wall time: ``time.monotonic()`` s of the next firing."""
        self._period_ns = max(1, round(period_s * 1e9))
        self._seen_ns = clock() if clock is not None else None  # the last clock reading (ns)
        self._step_ns = 0  # the clock's last step forward (ns)
        self._mark_ns = self._seen_ns  # the reading at the last firing, or at the schedule's start (ns)
        self._next_ns = None if self._seen_ns is None else self._seen_ns + self._period_ns
        """ROS time: ns of the next firing; None until the clock has been read."""

    @property
    def deadline(self) -> float | None:
        """``time.monotonic()`` s of the next firing; None on ROS time (the executor wakes on each ``/clock``)."""
        return None if self.clock is not None or self.cancelled else self.next_due

    def take(self, monotonic_now: float) -> bool:
        """True when the timer is due (its schedule then moves on by a period); ``monotonic_now``: wall s."""
        if self.cancelled:
            return False
        if self.clock is None:
            if self.next_due > monotonic_now:
                return False
            self.next_due += self.period_s
            if self.next_due < monotonic_now:  # fell behind by more than a period: skip, do not burst
                self.next_due = monotonic_now + self.period_s
            return True
        return self._take_ros_time()

    def _take_ros_time(self) -> bool:
        assert self.clock is not None
        now = self.clock()
        if now is None:
            return False
        if self._seen_ns is not None and now != self._seen_ns:
            self._step_ns = max(0, now - self._seen_ns)
        self._seen_ns = now
        period = self._period_ns
        if self._next_ns is None or self._mark_ns is None or now < self._mark_ns:  # first reading, or went back
            self._mark_ns, self._next_ns = now, now + period
            return False
        if now == self._mark_ns or now < self._next_ns - min(self._step_ns, period) // 2:
            return False  # fired on this reading already, or a later reading will be nearer the due time
        late = max(0, now - self._next_ns)
        self._next_ns += period * (1 + late // period)  # missed firings are skipped; the phase is kept
        self._mark_ns = now
        return True

    def cancel(self) -> None:
        self.cancelled = True
