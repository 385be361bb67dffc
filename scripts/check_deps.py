#!/usr/bin/env python3
"""Check that every Python package under src/ imports only the project packages it declares.

For each ament_python package ``src/<pkg>/`` the declared project dependencies are the ``<depend>`` /
``<exec_depend>`` entries of its ``package.xml`` that name another package of this repository; ``setup.py``'s
``install_requires`` must list the same ones. Every ``import`` of a project package in ``src/<pkg>/<pkg>/``
(at module level or inside functions) must name the package itself or a declared dependency, and the declared
graph must have no cycle. No module under src/ (tests aside) calls ``declare_parameter(`` but the runtime's
own (the node API, ``declared_params``, the transport backends, the tests' peer process): a node declares its
parameters with ``nodegraph.graph.declared_params.declare_params``, not a hand-rolled parameter block. Prints each
violation; exit status 1 when there is any.
"""

from __future__ import annotations

import ast
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

DEPEND_TAGS = ("depend", "exec_depend", "build_depend", "build_export_depend")
# where declare_parameter may be called (paths under src/; a trailing "/" takes the folder): the runtime itself
PARAMETER_RUNTIME = (
    "nodegraph/nodegraph/graph/api.py",
    "nodegraph/nodegraph/graph/declared_params.py",
    "nodegraph/nodegraph/transport/",
    "nodegraph/nodegraph/testing/peer.py",  # the tests' peer process: its roles exercise declare_parameter itself
)


def project_packages(src: Path) -> dict[str, Path]:
    """``{name: package dir}`` of every ament_python package under ``src`` (those with a setup.py)."""
    return {p.parent.name: p.parent for p in sorted(src.glob("*/setup.py")) if (p.parent / "package.xml").is_file()}


def declared_xml(package_dir: Path, names: set[str]) -> set[str]:
    root = ET.parse(package_dir / "package.xml").getroot()
    return {e.text.strip() for tag in DEPEND_TAGS for e in root.iter(tag) if e.text and e.text.strip() in names}


def declared_setup(package_dir: Path, names: set[str]) -> set[str]:
    text = (package_dir / "setup.py").read_text()
    match = re.search(r"install_requires\s*=\s*\[(.*?)\]", text, re.S)
    found = set(re.findall(r"[\"']([A-Za-z0-9_.-]+)", match.group(1))) if match else set()
    return found & names


def imported(package_dir: Path, names: set[str]) -> dict[str, list[str]]:
    """``{project package: ["file:line", ...]}`` imported by the modules of ``package_dir``."""
    out: dict[str, list[str]] = {}
    for path in sorted((package_dir / package_dir.name).rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                mods = [node.module]
            else:
                continue
            for mod in mods:
                top = mod.split(".")[0]
                if top in names:
                    out.setdefault(top, []).append(f"{path.relative_to(package_dir.parent)}:{node.lineno}")
    return out


def hand_rolled_parameters(src: Path) -> list[str]:
    """``"file:line"`` (relative to ``src``) of each ``declare_parameter(`` call outside :data:`PARAMETER_RUNTIME`
    and the tests (``test`` / ``tests`` folders)."""
    out: list[str] = []
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src).as_posix()
        if {"test", "tests"} & set(path.relative_to(src).parts[:-1]) or rel.startswith(PARAMETER_RUNTIME):
            continue
        tree = ast.parse(path.read_text(), str(path))
        calls = (n for n in ast.walk(tree) if isinstance(n, ast.Call) and callee(n) == "declare_parameter")
        out += [f"{rel}:{line}" for line in sorted(c.lineno for c in calls)]
    return out


def callee(call: ast.Call) -> str | None:
    """The called name: ``f`` of ``f(...)`` and of ``obj.f(...)``; None for other callables."""
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return [*stack[stack.index(m) :], m]
            if m not in state and (cycle := visit(m)):
                return cycle
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state and (cycle := visit(n)):
            return cycle
    return None


def check(src: Path) -> list[str]:
    """All violations in the packages under ``src``, as human-readable lines (empty when clean)."""
    packages = project_packages(src)
    names = set(packages) | {p.parent.name for p in src.glob("*/package.xml")}
    problems: list[str] = []
    graph: dict[str, set[str]] = {}
    for name, directory in packages.items():
        xml_deps = declared_xml(directory, names)
        setup_deps = declared_setup(directory, names)
        graph[name] = xml_deps
        if setup_deps - xml_deps - {"so101_msgs"} or (xml_deps - {"so101_msgs"}) - setup_deps:
            problems.append(
                f"{name}: package.xml declares {sorted(xml_deps - {'so101_msgs'})}, setup.py {sorted(setup_deps)}"
            )
        for dep, where in sorted(imported(directory, names).items()):
            if dep != name and dep not in xml_deps:
                problems.append(f"{name} imports {dep} without declaring it: {', '.join(where[:3])}")
    if cycle := find_cycle(graph):
        problems.append("dependency cycle: " + " -> ".join(cycle))
    problems += [
        f"{where}: a hand-rolled parameter block (declare_parameter); use nodegraph.graph.declared_params."
        "declare_params"
        for where in hand_rolled_parameters(src)
    ]
    return problems


def main() -> int:
    src = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1] / "src"
    problems = check(src)
    for line in problems:
        print(f"check_deps: {line}", file=sys.stderr)
    if not problems:
        print(f"  package dependencies: {len(project_packages(src))} packages, imports match package.xml and setup.py;"
              " parameters declared through declare_params")  # fmt: skip
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
