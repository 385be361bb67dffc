"""The twin's side imports without pyserial (a GPU or sim-only machine need not carry it), while a port failure
from pyserial is still caught as one of the transport's port failures."""

from __future__ import annotations

import subprocess
import sys

BLOCKED = """
import sys
sys.modules["serial"] = None  # any import of pyserial now raises ImportError
import so101_hardware, so101_hardware.config, so101_core.control.safety, so101_nodes.sim_node
print("ok")
"""


def test_sim_side_imports_without_pyserial() -> None:
    done = subprocess.run([sys.executable, "-c", BLOCKED], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-1500:]


def test_serial_exceptions_are_port_failures() -> None:
    import serial
    from so101_hardware.feetech.transport import _PORT_FAILURES

    assert isinstance(serial.SerialException("unplugged"), _PORT_FAILURES)
