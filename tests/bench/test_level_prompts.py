"""`bench.prompts_per_concurrency`: a closed-loop level's requests scale with its concurrency
(between MIN_LEVEL_PROMPTS and prompts_per_level), so the c=1 level of a 1-256 sweep does not
cost 256 requests one after another; open-loop levels keep prompts_per_level."""

from __future__ import annotations

import json
from pathlib import Path

from repro.runfolder import RunFolder
from repro.schema.level import Load, closed
from repro.schema.recipe import MIN_LEVEL_PROMPTS, Bench
from tests.support.cli import isolated_env, repro
from tests.support.simulator import Simulators


def test_the_level_count_scales_with_concurrency_between_its_bounds() -> None:
    bench = Bench(prompts_per_level=256, prompts_per_concurrency=4)
    counts = {c: bench.level_prompts(closed(c)) for c in (1, 2, 8, 32, 64, 256)}
    assert counts == {1: MIN_LEVEL_PROMPTS, 2: MIN_LEVEL_PROMPTS, 8: 32, 32: 128, 64: 256,
                      256: 256}  # fmt: skip
    assert bench.level_prompts(Load("rate", 4.0)) == 256
    assert Bench(prompts_per_level=40).level_prompts(closed(1)) == 40


def test_a_sweep_measures_the_scaled_count_and_resume_keeps_it(
    simulator: Simulators, tmp_path: Path
) -> None:
    server = simulator.tiny()
    run = tmp_path / "run"
    try:
        result = repro(
            "bench", "--url", server.url, "--concurrency", "1,8", "--prompts", "40",
            "--prompts-per-concurrency", "3", "--input-len", "32", "--output-len", "8",
            "--json", "--output", str(run), cwd=tmp_path, env=isolated_env(tmp_path),
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        completed = {
            lv["max_concurrency"]: lv["completed"] for lv in json.loads(result.stdout)["levels"]
        }
        assert completed == {1: MIN_LEVEL_PROMPTS, 8: 24}
        folder = RunFolder(run)
        rows = folder.requests_file(closed(8), 0).read_text().splitlines()
        assert len(rows) == 24
        recorded = json.loads(folder.recipe_file.read_text())["bench"]
        assert recorded["prompts_per_concurrency"] == 3
        refused = repro(
            "bench", "--resume", str(run), "--prompts-per-concurrency", "5",
            cwd=tmp_path, env=isolated_env(tmp_path),
        )  # fmt: skip
    finally:
        server.stop()
    assert refused.returncode != 0
    assert "--prompts-per-concurrency cannot be combined with --resume" in refused.stderr
