"""The package-dependency check (scripts/check_deps.py): clean on this tree, and failing on an upward import or a
hand-rolled parameter block."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[3]


def load_checker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_deps", REPO / "scripts" / "check_deps.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def copy_package(src: Path, dst: Path, name: str) -> None:
    shutil.copytree(src / name, dst / name, ignore=shutil.ignore_patterns("test", "*.egg-info", "__pycache__"))


def test_repository_packages_import_only_what_they_declare() -> None:
    assert load_checker().check(REPO / "src") == []


def test_an_upward_import_is_reported(tmp_path: Path) -> None:
    checker = load_checker()
    for name in ("nodegraph", "so101_core"):
        copy_package(REPO / "src", tmp_path, name)
    assert checker.check(tmp_path) == []
    sneaky = tmp_path / "so101_core" / "so101_core" / "sneaky.py"
    sneaky.write_text("def f() -> None:\n    from nodegraph.graph.api import Node  # noqa\n")
    problems = checker.check(tmp_path)
    assert len(problems) == 1
    assert "so101_core imports nodegraph without declaring it" in problems[0]
    assert "sneaky.py:2" in problems[0]


def test_a_cycle_and_a_setup_mismatch_are_reported(tmp_path: Path) -> None:
    checker = load_checker()
    for name in ("nodegraph", "so101_core"):
        copy_package(REPO / "src", tmp_path, name)
    xml = tmp_path / "nodegraph" / "package.xml"
    xml.write_text(xml.read_text().replace("<test_depend>", "<depend>so101_core</depend>\n  <test_depend>", 1))
    core_xml = tmp_path / "so101_core" / "package.xml"
    core_xml.write_text(core_xml.read_text().replace("<test_depend>", "<depend>nodegraph</depend>\n  <test_depend>", 1))
    problems = checker.check(tmp_path)
    assert any(p.startswith("dependency cycle:") for p in problems)
    assert any(p.startswith("nodegraph: package.xml declares ['so101_core'], setup.py []") for p in problems)


def test_a_hand_rolled_parameter_block_is_reported(tmp_path: Path) -> None:
    checker = load_checker()
    for name in ("nodegraph", "so101_core"):
        copy_package(REPO / "src", tmp_path, name)
    assert checker.check(tmp_path) == []  # the runtime's own calls (node API, declared_params, backends) pass
    block = 'def rate(node: object) -> float:\n    return node.declare_parameter("rate_hz", 30.0)\n'
    (tmp_path / "so101_core" / "so101_core" / "rolled.py").write_text(block)
    (tmp_path / "so101_core" / "test").mkdir()
    (tmp_path / "so101_core" / "test" / "test_rolled.py").write_text(block)  # a test may declare by hand
    problems = checker.check(tmp_path)
    assert len(problems) == 1, problems
    assert problems[0].startswith("so101_core/so101_core/rolled.py:2: a hand-rolled parameter block")
    assert "declare_params" in problems[0]
