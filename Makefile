# Thin targets: each calls a script or the so101 CLI.
.PHONY: setup demo test lint bench
setup:
	scripts/setup
demo: setup
	.venv/bin/so101 demo
test:
	scripts/test
lint:
	.venv/bin/ruff check . && .venv/bin/ruff format --check . && .venv/bin/mypy
bench:
	.venv/bin/so101 bench transport --json
