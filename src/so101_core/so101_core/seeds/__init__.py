"""Seed demonstrations: the compact file format shared by recording (teleop or scripted) and SkillGen."""

from so101_core.seeds.format import SeedDemo, SeedFormatError, load_seed, load_seeds, save_seed

__all__ = ["SeedDemo", "SeedFormatError", "load_seed", "load_seeds", "save_seed"]
