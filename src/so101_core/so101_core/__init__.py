"""SO-101 core library: robot spec, description, config, MuJoCo twin, seed format, units."""
