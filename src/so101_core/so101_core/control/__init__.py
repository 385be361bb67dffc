"""Control rules shared by the real arm's driver and the twin (:mod:`so101_core.control.safety`)."""
