"""The stages' order, pyproject.toml's [tool.importlinter] contracts, holds for the tree (as
`make lint` checks) and covers every package; an import running back up the order breaks it;
the simulator imports nothing outside itself; and no two modules import each other, even
through a deferred or a `TYPE_CHECKING` import."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
ORDER = "the stages' order"
# What the simulator's image has besides the standard library (and, for SGLang's own front
# end, what SGLang's environment has).
SIM_THIRD_PARTY = {"aiohttp", "sglang", "zmq"}


def _lint(src: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """import-linter on the `repro` package found in `src`, with the project's contracts."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    cmd = [str(LINT_IMPORTS), "--no-cache", str(ROOT / "pyproject.toml")]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _modules(src: Path) -> dict[str, Path]:
    """Every module under `src/repro`, by dotted name (a package by its own name)."""
    found = {}
    for path in sorted((src / "repro").rglob("*.py")):
        parts = path.relative_to(src).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imported(module: str, path: Path) -> Iterator[str]:
    """The dotted names `module` imports, wherever the import stands (module level, inside a
    function, under `if TYPE_CHECKING:`); a `from X import name` yields `X.name` too, which is
    a module when `name` is one."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, *([node.module] if node.module else [])])
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def _graph(src: Path) -> dict[str, set[str]]:
    """repro's module graph: each module -> the modules of repro it imports."""
    modules = _modules(src)
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        targets = set()
        for name in _imported(module, path):
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name != module:
                targets.add(name)
        graph[module] = targets
    return graph


def _loops(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    loops = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    loops.append(sorted(component))
    return loops


def _outside_the_simulator(src: Path) -> list[str]:
    """Each import of the simulator's modules that is neither the standard library, the
    simulator itself nor what its image holds, as `module: import`."""
    found = []
    for module, path in _modules(src).items():
        if not (module == "repro.sim" or module.startswith("repro.sim.")):
            continue
        for name in _imported(module, path):
            top = name.partition(".")[0]
            inside = name == "repro.sim" or name.startswith("repro.sim.")
            if not (inside or top in sys.stdlib_module_names or top in SIM_THIRD_PARTY):
                found.append(f"{module}: {name}")
    return sorted(set(found))


def _layered(pyproject: Path) -> set[str]:
    """The modules named in the layers contract."""
    config = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    (order,) = [c for c in config["tool"]["importlinter"]["contracts"] if c["name"] == ORDER]
    return {
        name.strip()
        for layer in order["layers"]
        for name in layer.replace("|", ":").split(":")
        if name.strip()
    }


def test_the_tree_keeps_every_contract(tmp_path: Path) -> None:
    result = _lint(SRC, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert " 0 broken" in result.stdout


def test_every_package_and_module_of_repro_is_in_the_stages_order() -> None:
    top_level = {
        f"repro.{path.stem if path.is_file() else path.name}"
        for path in (SRC / "repro").iterdir()
        if (path.suffix == ".py" and path.stem != "__init__") or (path / "__init__.py").is_file()
    }
    assert top_level - _layered(ROOT / "pyproject.toml") == set()


def test_no_module_imports_itself_back_even_deferred_or_for_types() -> None:
    assert _loops(_graph(SRC)) == []


def test_a_deferred_import_back_is_a_loop(tmp_path: Path) -> None:
    src = _copy_of_src(tmp_path)
    target = src / "repro" / "schema" / "lock.py"
    deferred = "\n\ndef _later() -> None:\n    from repro.schema.recipe import Recipe  # noqa\n"
    target.write_text(target.read_text() + deferred)
    recipe = src / "repro" / "schema" / "recipe.py"
    typing_only = "\nif TYPE_CHECKING:\n    from repro.schema import lock  # noqa\n"
    recipe.write_text(recipe.read_text() + typing_only)
    assert ["repro.schema.lock", "repro.schema.recipe"] in _loops(_graph(src))


def test_the_simulator_imports_nothing_outside_itself_and_its_image() -> None:
    assert _outside_the_simulator(SRC) == []


@pytest.mark.parametrize("outside", ["import repro.units", "import pydantic", "import yaml"])
def test_a_simulator_import_of_repro_or_its_dependencies_is_found(
    tmp_path: Path, outside: str
) -> None:
    src = _copy_of_src(tmp_path)
    target = src / "repro" / "sim" / "textgen.py"
    target.write_text(target.read_text() + f"\n\ndef _later() -> None:\n    {outside}  # noqa\n")
    assert _outside_the_simulator(src) == [f"repro.sim.textgen: {outside.split()[-1]}"]


def _copy_of_src(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    shutil.copytree(SRC / "repro", src / "repro", ignore=shutil.ignore_patterns("__pycache__"))
    return src


@pytest.mark.parametrize(
    ("module", "back_up", "contract"),
    [
        ("hub/models.py", "import repro.lock", ORDER),
        ("schema/lock.py", "import repro.recipe", ORDER),
        ("bench/metrics.py", "import repro.lock", "bench only talks HTTP"),
        ("bench/metrics.py", "import repro.report", ORDER),
        ("report/table.py", "import repro.bench", ORDER),
        ("lock/io.py", "import repro.run", ORDER),
        ("run/listing.py", "import repro.campaign", ORDER),
        ("realengine/servermetrics.py", "import repro.cli", ORDER),
        ("runfolder/naming.py", "import repro.hub", ORDER),
        ("fsutil.py", "import repro.errors", ORDER),
        ("sim/config.py", "import repro.units", ORDER),
    ],
)
def test_an_import_back_up_the_order_is_refused(
    tmp_path: Path, module: str, back_up: str, contract: str
) -> None:
    src = _copy_of_src(tmp_path)
    target = src / "repro" / module
    target.write_text(target.read_text() + f"\n{back_up}  # noqa\n")
    result = _lint(src, tmp_path)
    assert result.returncode != 0
    broken = [line for line in result.stdout.splitlines() if line.endswith("BROKEN")]
    assert [line for line in broken if line.startswith(contract)], result.stdout
    assert back_up.split()[-1] in result.stdout  # the report names the import
