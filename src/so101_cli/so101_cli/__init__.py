"""The ``so101`` command line (typer + rich)."""
