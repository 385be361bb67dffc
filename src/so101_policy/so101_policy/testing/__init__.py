"""Test doubles shipped with so101_policy for the tests of every package: ``dataset`` (a tiny LeRobot dataset with
the so101 features), ``checkpoint`` (a tiny trained ACT), ``fake_server`` (a policy server whose behaviour a test
switches at run time)."""
