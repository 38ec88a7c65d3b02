"""Every REPRO_* environment variable is named in one module, repro.settings, with its default;
the simulator (its own image, no import of repro) reads each one the host sets for it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from repro import settings
from repro.settings import SIM_SETTINGS, Setting

SRC = Path(__file__).resolve().parents[1] / "src" / "repro"
# What runs elsewhere and cannot import repro: the simulator (its own image), the stand-ins
# (SGLang's environment) and the image build's context (inside the build).
ELSEWHERE = ("sim", "realengine/standins", "image/context")
NAME = re.compile(r"\bREPRO_[A-Z][A-Z0-9_]*\b")


def _strings(tree: ast.AST) -> list[ast.Constant]:
    """The string constants of a module, docstrings left out."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        if id(node) not in docstrings
    ]


def test_no_module_but_settings_spells_a_repro_variable() -> None:
    spelled = []
    for path in sorted(SRC.rglob("*.py")):
        relative = path.relative_to(SRC).as_posix()
        if relative == "settings.py" or relative.startswith(ELSEWHERE):
            continue
        for node in _strings(ast.parse(path.read_text(encoding="utf-8"))):
            spelled += [f"{relative}:{node.lineno}: {name}" for name in NAME.findall(node.value)]
    assert spelled == []


def test_the_simulator_reads_every_variable_the_host_sets_for_it() -> None:
    simulator = "\n".join(p.read_text(encoding="utf-8") for p in (SRC / "sim").rglob("*.py"))
    assert [s.name for s in SIM_SETTINGS if f'"{s.name}"' not in simulator] == []


def test_each_name_is_one_setting() -> None:
    found = [v for v in vars(settings).values() if isinstance(v, Setting)]
    assert len({s.name for s in found}) == len(found)
    assert all(NAME.fullmatch(s.name) for s in found)


def test_an_empty_value_is_unset_and_the_default_is_the_settings_own() -> None:
    assert settings.STATE_DIR.read({}) == ".repro"
    assert settings.STATE_DIR.read({"REPRO_STATE_DIR": ""}) == ".repro"
    assert settings.STATE_DIR.read({"REPRO_STATE_DIR": "/srv/state"}) == "/srv/state"
    assert settings.LOCKS_DIR.read({"REPRO_LOCKS_DIR": ""}) is None
