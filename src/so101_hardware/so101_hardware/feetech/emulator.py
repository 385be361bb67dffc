"""Emulator of N Feetech STS3215 servos on a pseudo-terminal, speaking protocol 0 byte for byte.

The fake sits at the lowest real boundary: clients open :attr:`FeetechEmulator.port` (``/dev/pts/N``) with
pyserial / the Feetech SDK exactly as they would open ``/dev/ttyACM0``. A pty accepts any termios baud rate,
so ``PortHandler(port).setBaudRate(1_000_000)`` works unchanged. Bytes are not paced at the baud rate.

Model (per servo, one register table of 256 bytes):

- ``Present_Position = (actual - Homing_Offset) mod 4096``; ``actual`` is the raw encoder count.
- With torque on, the position moves toward ``Goal_Position`` (clamped to the position limits when they are
  not both 0) at ``Goal_Speed`` counts/s, or :attr:`FeetechEmulator.max_speed` when that is 0 or larger.
  Acceleration and Goal_Time are not modelled (infinite acceleration).
- Present speed (counts/s, sign bit 15), load (0.1 %, sign bit 10), current (6.5 mA) follow the motion;
  voltage (0.1 V) and temperature (°C) are constant unless injected.
- Writing 128 to Torque_Enable sets the homing offset so that the present position reads 2048.
- Faults: a servo that is gone never answers; corrupted replies carry a wrong checksum; a fraction of
  replies can be dropped (seeded RNG, reproducible); injected error bits appear in every status packet's
  error byte and in the Status register (65); :meth:`FeetechEmulator.trip_protection` also cuts torque
  (Torque_Enable 0) as the servo's own overload / overheat protection does; every reply can be delayed.
- ``baudrate``: when given, requests and replies take their wire time (10 bits per byte) before the reply is
  written, so loop-rate figures include the physical limit of the bus.
- ``plant``: physics in place of the motion model above (a :class:`ServoPlant`, e.g. the twin with hidden
  dynamics, :mod:`.twin_plant`): goals (clamped to the position limits, in raw encoder counts), torque on/off
  and Torque_Limit go to it; raw position, speed and load come from it. Goal_Speed is then not modelled.
"""

from __future__ import annotations

import contextlib
import os
import random
import select
import threading
import time
import tty
from collections.abc import Iterable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Protocol

from . import protocol as p

_DEFAULT_IDS = (1, 2, 3, 4, 5, 6)
_NOMINAL_LOAD = 150  # 15 % of max torque at full speed, emulated


class ServoPlant(Protocol):
    """Physics behind all emulated servos at once, in raw encoder counts (before the homing offset); ``now``
    is ``time.monotonic()`` s. Called with the emulator's lock held, from its thread or a client's."""

    def advance(self, now: float) -> None:
        """Move the physics on to ``now``."""

    def set_goal(self, servo_id: int, raw_goal: float, now: float) -> None:
        """Servo ``servo_id`` was sent a goal (raw counts) at ``now``."""

    def set_torque(self, servo_id: int, enabled: bool, limit: float, now: float) -> None:
        """Torque of ``servo_id`` switched on/off; ``limit``: Torque_Limit as a fraction (0..1)."""

    def place(self, servo_id: int, raw: float) -> None:
        """The horn of ``servo_id`` was moved by hand to ``raw`` counts."""

    def reading(self, servo_id: int) -> tuple[float, float, float]:
        """(raw position counts, speed counts/s, load as a signed fraction of the maximum torque)."""


@dataclass
class _Faults:
    gone: bool = False
    corrupt_checksum: bool = False
    drop_rate: float = 0.0
    error_bits: int = 0
    load: int | None = None


@dataclass
class _Servo:
    """State of one emulated servo; guarded by the emulator lock."""

    servo_id: int
    regs: bytearray = field(default_factory=lambda: bytearray(256))
    actual: float = 2048.0  # raw encoder counts, 0..4095
    velocity: float = 0.0  # counts/s
    pending: tuple[int, bytes] | None = None  # REG_WRITE buffer (address, data)
    faults: _Faults = field(default_factory=_Faults)
    plant_load: float = 0.0  # load fraction reported by the plant

    def get(self, reg: p.Register) -> int:
        return p.decode_value(reg, bytes(self.regs[reg.address : reg.end]))

    def put(self, reg: p.Register, value: int) -> None:
        self.regs[reg.address : reg.end] = p.encode_value(reg, value)

    @property
    def offset(self) -> int:
        return self.get(p.HOMING_OFFSET)

    @property
    def present(self) -> float:
        return (self.actual - self.offset) % p.RESOLUTION


class FeetechEmulator:
    """N STS3215 servos behind a pty; run with :meth:`start` / :meth:`stop` or as a context manager.

    Args:
        ids: servo ids on the bus.
        max_speed: top speed of the emulated motors, counts/s (STS3215 at 12 V ≈ 3000 counts/s).
        tick_s: dynamics update period when the bus is idle, s.
        seed: seed of the RNG that decides dropped replies.
        initial_position: present position of every servo at start, counts.
        baudrate: pace the bus at this many bit/s (10 bits per byte on the wire); ``None``: no pacing.
        plant: physics behind the servos (see the module docstring); ``None``: the built-in motion model.
    """

    def __init__(
        self,
        ids: Iterable[int] = _DEFAULT_IDS,
        *,
        max_speed: float = 3000.0,
        tick_s: float = 0.005,
        seed: int = 0,
        initial_position: int = 2048,
        baudrate: int | None = None,
        plant: ServoPlant | None = None,
    ) -> None:
        id_list = list(ids)
        if not id_list or len(set(id_list)) != len(id_list):
            raise ValueError(f"ids must be non-empty and unique, got {id_list}")
        for sid in id_list:
            if not 0 <= sid <= p.MAX_ID:
                raise ValueError(f"servo id {sid} out of range 0..{p.MAX_ID}")
        if max_speed <= 0 or tick_s <= 0:
            raise ValueError("max_speed and tick_s must be positive")
        if baudrate is not None and baudrate <= 0:
            raise ValueError(f"baudrate must be positive, got {baudrate}")
        self.max_speed = float(max_speed)
        self.baudrate = baudrate
        self.plant = plant
        self.reply_delay_s = 0.0
        self._tick_s = tick_s
        self._rng = random.Random(seed)
        self._lock = threading.RLock()
        self._servos: dict[int, _Servo] = {}
        for sid in id_list:
            self._servos[sid] = self._new_servo(sid, initial_position)
        self._master: int | None = None
        self._slave: int | None = None
        self._port: str | None = None
        self._wake_r: int | None = None
        self._wake_w: int | None = None
        self._thread: threading.Thread | None = None
        self._running = False
        self._last_tick = time.monotonic()
        self.packets_received = 0
        self.bad_packets_received = 0
        self.replies_sent = 0
        self.replies_dropped = 0
        self._goal_log: list[tuple[float, int, int]] | None = None

    # ------------------------------------------------------------------ lifecycle
    @property
    def port(self) -> str:
        """Path of the slave tty that clients open, e.g. ``/dev/pts/3``."""
        if self._port is None:
            raise RuntimeError("emulator not started")
        return self._port

    @property
    def ids(self) -> tuple[int, ...]:
        """Ids of the emulated servos (including those currently 'gone')."""
        with self._lock:
            return tuple(self._servos)

    def start(self) -> FeetechEmulator:
        """Open the pty and start the servo thread; returns ``self``."""
        if self._running:
            return self
        master, slave = os.openpty()
        tty.setraw(slave)  # no echo / line discipline before the client configures the port
        self._master, self._slave = master, slave
        self._port = os.ttyname(slave)
        self._wake_r, self._wake_w = os.pipe()
        self._running = True
        self._last_tick = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="feetech-emulator", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the thread and close the pty; clients then see an I/O error on the port."""
        if not self._running:
            return
        self._running = False
        if self._wake_w is not None:
            os.write(self._wake_w, b"x")
        if self._thread is not None:
            self._thread.join(timeout=2.0)
        for fd in (self._master, self._slave, self._wake_r, self._wake_w):
            if fd is not None:
                os.close(fd)
        self._master = self._slave = self._wake_r = self._wake_w = None
        self._thread = None

    def __enter__(self) -> FeetechEmulator:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # ------------------------------------------------------------------ state access (test / bench side)
    def read_register(self, servo_id: int, register: p.Register) -> int:
        """Current value of a register, decoded, without going through the bus."""
        with self._lock:
            servo = self._servo(servo_id)
            self._tick_locked()
            return servo.get(register)

    def write_register(self, servo_id: int, register: p.Register, value: int) -> None:
        """Set a register directly (no bus traffic), with the same side effects as a bus write."""
        with self._lock:
            self._write_locked(self._servo(servo_id), register.address, p.encode_value(register, value))

    def set_present_position(self, servo_id: int, counts: float) -> None:
        """Move the horn 'by hand' so that Present_Position reads ``counts`` (0..4095)."""
        with self._lock:
            servo = self._servo(servo_id)
            servo.actual = (counts + servo.offset) % p.RESOLUTION
            servo.velocity = 0.0
            if self.plant is not None:
                self.plant.place(servo_id, counts + servo.offset)

    def record_goals(self, enabled: bool = True) -> None:
        """Start (clearing it) or stop the log of every Goal_Position a client writes."""
        with self._lock:
            self._goal_log = [] if enabled else None

    def goal_history(self, servo_id: int | None = None) -> list[tuple[float, int, int]]:
        """``(monotonic s, servo id, goal counts)`` of every Goal_Position write since :meth:`record_goals`."""
        with self._lock:
            log = list(self._goal_log or [])
        return [e for e in log if servo_id is None or e[1] == servo_id]

    def present_position(self, servo_id: int) -> int:
        """Present_Position register value, counts."""
        return self.read_register(servo_id, p.PRESENT_POSITION)

    # ------------------------------------------------------------------ fault injection
    def set_gone(self, servo_id: int, gone: bool = True) -> None:
        """A gone servo never answers (unplugged cable / dead servo); its state is kept."""
        with self._lock:
            self._servo(servo_id).faults.gone = gone

    def set_corrupt_checksum(self, servo_id: int | None = None, corrupt: bool = True) -> None:
        """Replies of ``servo_id`` (all servos when ``None``) carry a wrong checksum."""
        with self._lock:
            for servo in self._targets(servo_id):
                servo.faults.corrupt_checksum = corrupt

    def set_drop_rate(self, fraction: float, servo_id: int | None = None) -> None:
        """Drop this fraction (0..1) of the replies of ``servo_id`` (all servos when ``None``)."""
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(f"fraction must be in [0, 1], got {fraction}")
        with self._lock:
            for servo in self._targets(servo_id):
                servo.faults.drop_rate = fraction

    def set_error_bits(self, servo_id: int, bits: int) -> None:
        """Error bits (see ``ServoFault``: voltage 0x01, overheat 0x04, overload 0x20, ...)."""
        if not 0 <= bits <= 0x7F:
            raise ValueError(f"error bits must be in 0..0x7F, got {bits:#x}")
        with self._lock:
            servo = self._servo(servo_id)
            servo.faults.error_bits = bits
            servo.regs[p.STATUS.address] = bits

    def trip_protection(self, servo_id: int, bits: int) -> None:
        """The servo's own protection fires: error ``bits`` set (overload 0x20, overheat 0x04, ...) and torque
        cut (Torque_Enable 0), as a real STS3215 does; the bits stay until :meth:`clear_faults`."""
        with self._lock:
            self.set_error_bits(servo_id, bits)
            servo = self._servo(servo_id)
            servo.regs[p.TORQUE_ENABLE.address] = 0
            servo.velocity = 0.0

    def set_reply_delay(self, seconds: float) -> None:
        """Delay every reply by ``seconds`` (a slow bus / adapter); 0 restores prompt replies."""
        if not (seconds >= 0.0 and seconds < 10.0):
            raise ValueError(f"reply delay must be in [0, 10) s, got {seconds}")
        self.reply_delay_s = float(seconds)

    def set_temperature(self, servo_id: int, celsius: int) -> None:
        """Present_Temperature, °C."""
        with self._lock:
            self._servo(servo_id).put(p.PRESENT_TEMPERATURE, int(celsius))

    def set_voltage(self, servo_id: int, volts: float) -> None:
        """Present_Voltage, V (stored in 0.1 V units)."""
        with self._lock:
            self._servo(servo_id).put(p.PRESENT_VOLTAGE, round(volts / p.VOLTAGE_UNIT_V))

    def set_load(self, servo_id: int, load: int | None) -> None:
        """Force Present_Load (0.1 % units, signed, |load| ≤ 1000); ``None`` returns to the motion model."""
        with self._lock:
            self._servo(servo_id).faults.load = load

    def set_model_number(self, servo_id: int, model: int) -> None:
        """Make ``servo_id`` report another model number (a wrong servo on the bus)."""
        with self._lock:
            self._servo(servo_id).put(p.MODEL_NUMBER, model)

    def clear_faults(self, servo_id: int | None = None) -> None:
        """Remove every injected fault and restore nominal temperature and voltage."""
        with self._lock:
            for servo in self._targets(servo_id):
                servo.faults = _Faults()
                servo.regs[p.STATUS.address] = 0
                servo.put(p.PRESENT_TEMPERATURE, 30)
                servo.put(p.PRESENT_VOLTAGE, 120)

    # ------------------------------------------------------------------ internals
    @staticmethod
    def _new_servo(servo_id: int, initial_position: int) -> _Servo:
        servo = _Servo(servo_id, actual=float(initial_position % p.RESOLUTION))
        servo.put(p.MODEL_NUMBER, p.STS3215_MODEL_NUMBER)
        servo.regs[0], servo.regs[1] = 3, 10  # firmware 3.10
        servo.put(p.ID, servo_id)
        servo.put(p.BAUD_RATE, 0)
        servo.put(p.RETURN_DELAY_TIME, 0)
        servo.put(p.RESPONSE_STATUS_LEVEL, 1)
        servo.put(p.MIN_POSITION_LIMIT, 0)
        servo.put(p.MAX_POSITION_LIMIT, p.MAX_POSITION)
        servo.put(p.MAX_TEMPERATURE_LIMIT, 70)
        servo.put(p.MAX_VOLTAGE_LIMIT, 140)
        servo.put(p.MIN_VOLTAGE_LIMIT, 40)
        servo.put(p.MAX_TORQUE_LIMIT, 1000)
        servo.put(p.P_COEFFICIENT, 32)
        servo.put(p.D_COEFFICIENT, 32)
        servo.put(p.TORQUE_LIMIT, 1000)
        servo.put(p.GOAL_POSITION, initial_position % p.RESOLUTION)
        servo.put(p.PRESENT_VOLTAGE, 120)
        servo.put(p.PRESENT_TEMPERATURE, 30)
        servo.put(p.PRESENT_POSITION, initial_position % p.RESOLUTION)
        return servo

    def _servo(self, servo_id: int) -> _Servo:
        try:
            return self._servos[servo_id]
        except KeyError:
            raise KeyError(f"no emulated servo with id {servo_id}") from None

    def _targets(self, servo_id: int | None) -> list[_Servo]:
        return list(self._servos.values()) if servo_id is None else [self._servo(servo_id)]

    def _run(self) -> None:
        assert self._master is not None and self._wake_r is not None
        buf = bytearray()
        while self._running:
            try:
                ready, _, _ = select.select([self._master, self._wake_r], [], [], self._tick_s)
            except (OSError, ValueError):
                return
            if self._wake_r in ready:
                return
            if self._master in ready:
                try:
                    chunk = os.read(self._master, 4096)
                except OSError:  # the last slave fd closed: nothing to serve until one reopens
                    time.sleep(self._tick_s)
                    continue
                buf.extend(chunk)
                received = len(chunk)
            else:
                received = 0
            with self._lock:
                self._tick_locked()
                replies = b"".join(self._handle(pkt) for pkt in self._extract_packets(buf))
            wire_s = (received + len(replies)) * 10.0 / self.baudrate if self.baudrate else 0.0
            delay = wire_s + (self.reply_delay_s if replies else 0.0)
            if delay > 0:
                time.sleep(delay)
            if replies:
                with contextlib.suppress(OSError):
                    os.write(self._master, replies)

    def _extract_packets(self, buf: bytearray) -> list[tuple[int, int, bytes]]:
        """Pop complete, valid instruction packets ``(id, instruction, params)`` off ``buf``."""
        packets: list[tuple[int, int, bytes]] = []
        while True:
            start = buf.find(p.HEADER)
            if start < 0:
                del buf[: max(0, len(buf) - 1)]  # keep a trailing 0xFF that may start a header
                return packets
            del buf[:start]
            if len(buf) < 4:
                return packets
            sid, length = buf[2], buf[3]
            if sid == 0xFF or length < 2:
                del buf[:1]  # FF FF FF ...: resynchronise one byte later
                continue
            total = length + 4
            if len(buf) < total:
                return packets
            body = bytes(buf[2 : total - 1])
            chk = buf[total - 1]
            del buf[:total]
            self.packets_received += 1
            if p.checksum(body) != chk:
                self.bad_packets_received += 1  # a real servo ignores it silently
                continue
            packets.append((sid, body[2], body[3:]))

    def _handle(self, packet: tuple[int, int, bytes]) -> bytes:
        sid, inst, params = packet
        if sid == p.BROADCAST_ID:
            return self._handle_broadcast(inst, params)
        servo = self._servos.get(sid)
        if servo is None or servo.faults.gone:
            return b""
        if inst == p.INST_PING:
            return self._reply(servo, b"")
        if inst == p.INST_READ and len(params) == 2:
            addr, n = params
            return self._reply(servo, self._read_locked(servo, addr, n), is_read=True)
        if inst == p.INST_WRITE and len(params) >= 2:
            self._write_locked(servo, params[0], params[1:])
            return self._reply(servo, b"")
        if inst == p.INST_REG_WRITE and len(params) >= 2:
            servo.pending = (params[0], bytes(params[1:]))
            return self._reply(servo, b"")
        if inst == p.INST_ACTION:
            self._action(servo)
            return self._reply(servo, b"")
        return b""  # unknown instruction or malformed params: no answer, as on the real bus

    def _handle_broadcast(self, inst: int, params: bytes) -> bytes:
        live = [s for s in self._servos.values() if not s.faults.gone]
        if inst == p.INST_PING:
            return b"".join(self._reply(s, b"") for s in sorted(live, key=lambda s: s.servo_id))
        if inst == p.INST_SYNC_READ and len(params) >= 2:
            addr, n = params[0], params[1]
            out = []
            for sid in params[2:]:
                servo = self._servos.get(sid)
                if servo is not None and not servo.faults.gone:
                    out.append(self._reply(servo, self._read_locked(servo, addr, n), is_read=True))
            return b"".join(out)
        if inst == p.INST_SYNC_WRITE and len(params) >= 2:
            addr, n = params[0], params[1]
            block = params[2:]
            for i in range(0, len(block) - n, n + 1):
                servo = self._servos.get(block[i])
                if servo is not None and not servo.faults.gone:
                    self._write_locked(servo, addr, block[i + 1 : i + 1 + n])
            return b""
        if inst == p.INST_WRITE and len(params) >= 2:
            for servo in live:
                self._write_locked(servo, params[0], params[1:])
            return b""
        if inst == p.INST_ACTION:
            for servo in live:
                self._action(servo)
        return b""

    def _reply(self, servo: _Servo, data: bytes, *, is_read: bool = False) -> bytes:
        if servo.regs[p.RESPONSE_STATUS_LEVEL.address] == 0 and not is_read:
            return b""
        if servo.faults.drop_rate > 0.0 and self._rng.random() < servo.faults.drop_rate:
            self.replies_dropped += 1
            return b""
        packet = bytearray(p.build_packet(servo.servo_id, servo.faults.error_bits, data))
        if servo.faults.corrupt_checksum:
            packet[-1] ^= 0x5A
        self.replies_sent += 1
        return bytes(packet)

    def _action(self, servo: _Servo) -> None:
        if servo.pending is not None:
            addr, data = servo.pending
            servo.pending = None
            self._write_locked(servo, addr, data)

    def _read_locked(self, servo: _Servo, addr: int, n: int) -> bytes:
        self._refresh_present(servo)
        return bytes(servo.regs[addr : addr + n]).ljust(n, b"\x00")

    def _write_locked(self, servo: _Servo, addr: int, data: bytes) -> None:
        self._tick_locked()
        for i, value in enumerate(data):
            a = addr + i
            if a >= len(servo.regs) or a in _READ_ONLY:
                continue
            if a == p.TORQUE_ENABLE.address and value == 128:
                # STS "calibrate middle": present position becomes 2048.
                servo.put(p.HOMING_OFFSET, 0)
                offset = round(servo.actual - 2048)
                offset = (offset + 2048) % p.RESOLUTION - 2048
                servo.put(p.HOMING_OFFSET, max(-2047, min(2047, offset)))
                continue
            servo.regs[a] = value
        if self._goal_log is not None and addr <= p.GOAL_POSITION.address < addr + len(data):
            self._goal_log.append((time.monotonic(), servo.servo_id, servo.get(p.GOAL_POSITION)))
        if self.plant is not None:
            self._tell_plant(servo, addr, addr + len(data))
        new_id = servo.regs[p.ID.address]
        if new_id != servo.servo_id and new_id not in self._servos and new_id <= p.MAX_ID:
            del self._servos[servo.servo_id]
            servo.servo_id = new_id
            self._servos[new_id] = servo
        elif new_id != servo.servo_id:
            servo.regs[p.ID.address] = servo.servo_id

    def _tell_plant(self, servo: _Servo, start: int, end: int) -> None:
        """Pass a write that touched the goal, torque or torque limit on to the plant."""
        assert self.plant is not None
        now = time.monotonic()

        def touched(reg: p.Register) -> bool:
            return start < reg.end and reg.address < end

        enabled = servo.regs[p.TORQUE_ENABLE.address] == 1
        if touched(p.TORQUE_ENABLE) or touched(p.TORQUE_LIMIT):
            self.plant.set_torque(servo.servo_id, enabled, servo.get(p.TORQUE_LIMIT) / 1000.0, now)
        goal_changed = any(touched(r) for r in (p.GOAL_POSITION, p.MIN_POSITION_LIMIT, p.MAX_POSITION_LIMIT))
        if enabled and (goal_changed or touched(p.TORQUE_ENABLE)):  # a servo without torque ignores its goal
            self.plant.set_goal(servo.servo_id, self._clamped_goal(servo) + servo.offset, now)

    @staticmethod
    def _clamped_goal(servo: _Servo) -> float:
        goal = float(servo.get(p.GOAL_POSITION))
        lo, hi = servo.get(p.MIN_POSITION_LIMIT), servo.get(p.MAX_POSITION_LIMIT)
        return min(max(goal, float(lo)), float(hi)) if lo or hi else goal

    def _tick_locked(self) -> None:
        now = time.monotonic()
        dt = min(now - self._last_tick, 0.1)
        self._last_tick = now
        if dt <= 0:
            return
        if self.plant is not None:
            self.plant.advance(now)
            for servo in self._servos.values():
                raw, speed, load = self.plant.reading(servo.servo_id)
                servo.actual, servo.velocity, servo.plant_load = raw % p.RESOLUTION, speed, load
                self._refresh_present(servo)
            return
        for servo in self._servos.values():
            self._step(servo, dt)

    def _step(self, servo: _Servo, dt: float) -> None:
        if servo.regs[p.TORQUE_ENABLE.address] != 1:
            servo.velocity = 0.0
        else:
            goal = float(servo.get(p.GOAL_POSITION))
            lo, hi = servo.get(p.MIN_POSITION_LIMIT), servo.get(p.MAX_POSITION_LIMIT)
            if lo or hi:
                goal = min(max(goal, float(lo)), float(hi))
            speed = abs(servo.get(p.GOAL_SPEED)) or self.max_speed
            speed = min(speed, self.max_speed)
            error = goal - servo.present
            step = max(-speed * dt, min(speed * dt, error))
            servo.actual = (servo.actual + step) % p.RESOLUTION
            servo.velocity = step / dt
        self._refresh_present(servo)

    def _refresh_present(self, servo: _Servo) -> None:
        servo.put(p.PRESENT_POSITION, round(servo.present) % p.RESOLUTION)
        speed = max(-32767, min(32767, round(servo.velocity)))
        servo.put(p.PRESENT_SPEED, speed)
        if servo.faults.load is not None:
            load = servo.faults.load
        elif self.plant is not None:
            load = round(servo.plant_load * 1000.0)
        else:
            load = round(_NOMINAL_LOAD * servo.velocity / self.max_speed)
        load = max(-1000, min(1000, load))
        servo.put(p.PRESENT_LOAD, load)
        servo.put(p.PRESENT_CURRENT, round(abs(load) * 2.0))
        goal = servo.get(p.GOAL_POSITION)
        moving = servo.regs[p.TORQUE_ENABLE.address] == 1 and abs(goal - servo.present) > 1.0
        servo.regs[p.MOVING.address] = int(moving)
        servo.regs[p.STATUS.address] = servo.faults.error_bits


_READ_ONLY = frozenset(
    a for reg in p.CONTROL_TABLE.values() if reg.read_only for a in range(reg.address, reg.end)
) | frozenset({0, 1, 2})
