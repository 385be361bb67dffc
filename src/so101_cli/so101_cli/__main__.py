"""``python -m so101_cli``: the so101 command."""

from so101_cli.main import main

main()
