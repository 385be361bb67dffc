"""so101 robot side: graph runtime, drivers, twin, launch and CLI."""
