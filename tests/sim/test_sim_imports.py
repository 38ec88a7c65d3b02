"""repro.sim runs where only the standard library and aiohttp exist (the simulator image); its
`sglang_*` modules run in SGLang's own Python and may use SGLang's dependencies too."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

SIM = Path(__file__).resolve().parents[2] / "src" / "repro" / "sim"


def test_only_stdlib_aiohttp_and_itself() -> None:
    light = set(sys.stdlib_module_names) | {"aiohttp", "sglang"}
    for path in sorted(SIM.rglob("*.py")):
        allowed = light | ({"zmq"} if path.name.startswith("sglang_") else set())
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top == "repro":
                    assert name.startswith("repro.sim"), f"{path}: imports {name}"
                else:
                    assert top in allowed, f"{path}: imports {name}"
