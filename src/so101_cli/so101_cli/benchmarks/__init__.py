"""Benchmarks behind ``so101 bench ...``; results go to ``bench/results/*.json``."""
