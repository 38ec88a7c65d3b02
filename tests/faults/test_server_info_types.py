"""A `/server_info` with fields of the wrong type is one error line naming the field, before
any run folder exists (none is left "running")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.faults.hostile_server import json_server
from tests.support.cli import isolated_env, repro

BAD_INFOS: list[dict[str, Any]] = [
    {"version": 5},
    {"version": "0.5.23", "sim_profile": 7},
    {"version": "0.5.23", "sim_time_scale": "fast"},
    {"version": ["0", "5"]},
]


@pytest.mark.parametrize("info", BAD_INFOS, ids=str)
def test_server_info_of_the_wrong_types_is_one_line(
    info: dict[str, Any], tmp_path: Path, repo_root: Path
) -> None:
    with json_server({"/server_info": info, "/flush_cache": {}}) as url:
        env = isolated_env(tmp_path)
        runs = tmp_path / "runs"
        for command in (
            ["bench", "--url", url, "--prompts", "1", "--concurrency", "1"],
            ["accept", "demo", "--url", url, "--output", str(runs / "acc")],
        ):
            cwd = tmp_path if command[0] == "bench" else repo_root
            result = repro(*command, cwd=cwd, env=env, timeout=60)
            assert result.returncode == 1, result.stderr
            assert "Traceback" not in result.stderr
            first = result.stderr.strip().splitlines()[0]
            assert first.startswith("error: ") and "/server_info: " in first, first
        assert not runs.exists() or not any(runs.iterdir())
