"""System identification of an arm's twin (pure numpy + MuJoCo, no transport).

Modules: ``arm_sim`` (the arm alone with given dynamics: replaying recorded commands, or stepped in wall time
as the "real arm" behind the servo emulator), ``excitation`` (safe per-joint chirps and steps),
``recording`` (what a recording holds and the checks that refuse a bad one), ``fit`` (per-joint
identification with uncertainty), ``validation`` (tracking error of a twin against a recording).
"""
