"""Test doubles shipped with so101_core for the tests of every package (``gr00t_rules``: GR00T N1.6's
modality-config rules, where Isaac-GR00T itself cannot be installed)."""
