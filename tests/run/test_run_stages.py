"""The one list of stages: its order is the plan's, `--from`'s and the exit codes'."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import main
from repro.errors import ReproError
from repro.run.pipeline import STAGE_NAMES, StageFailed
from repro.run.stages import bench_summary
from repro.schema.level import Level
from repro.schema.recipe import Bench

ORDER = ["doctor", "lock", "image", "fetch", "launch", "accept", "bench", "report", "stop"]


def test_the_order_and_exit_codes_are_the_pipelines() -> None:
    assert STAGE_NAMES == ORDER
    codes = {name: StageFailed(name, ReproError("boom")).exit_code for name in ORDER}
    assert codes == {name: 10 + index for index, name in enumerate(ORDER)}


def test_help_and_from_choices_follow_the_list() -> None:
    result = CliRunner().invoke(main, ["run", "--help"])
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    assert "Stages: " + ", ".join(ORDER) + "." in text
    assert "(doctor 10 ... stop 18)" in text
    assert "[" + "|".join(ORDER) + "]" in text


@pytest.mark.docker  # a dry run asks the engine which image it would run
def test_dry_run_plans_every_stage_in_order_and_writes_nothing(
    repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REPRO_STATE_DIR", str(tmp_path / "state"))
    runs = tmp_path / "runs"
    demo = str(repo_root / "recipes" / "demo.yaml")
    args = ["run", demo, "--dry-run", "--from", "fetch", "--runs-dir", str(runs)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    plan = re.findall(r"^\s+(\d+)\. (\w+)\s+(.*)$", result.output, re.MULTILINE)
    assert [(int(n), name) for n, name, _ in plan] == list(enumerate(ORDER, start=1))
    marks = {name: mark for _, name, mark in plan}
    assert all(marks[name] == "skip (--from)" for name in ORDER[:3])
    assert marks["fetch"] == "nothing to download (simulated)"
    assert marks["bench"].startswith("concurrency sweep")
    assert not runs.exists() and not (tmp_path / "state").exists()


@pytest.mark.parametrize(
    ("recipe", "profile"),
    [
        ("kimi26-pp8", "kimi26-pp8-rtx6000"),
        ("kimi26-ep8", "kimi26-ep8-rtx6000"),
        ("kimi26-tp8-dflash-b200", "kimi26-tp8-b200"),
    ],
)
@pytest.mark.docker  # a dry run asks the engine which image it would run
def test_a_simulated_dry_run_plans_on_the_layouts_profile_and_keeps_no_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, recipe: str, profile: str
) -> None:
    monkeypatch.setenv("REPRO_STATE_DIR", str(tmp_path / "state"))
    runs = tmp_path / "runs"
    args = ["run", recipe, "--sim", "--dry-run", "--runs-dir", str(runs)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert f"REPRO_SIM_PROFILE={profile}" in result.output.replace("'", "")
    assert not runs.exists() or not any(runs.iterdir())  # the plan's twin recipe is gone


def _level(c: int, tok_s: float, valid: bool = True) -> Level:
    return Level(
        max_concurrency=c,
        completed=c,
        duration=1.0,
        request_throughput=1.0,
        output_throughput=tok_s,
        total_output_tokens=int(tok_s),
        valid=valid,
        reasons=[] if valid else ["the simulator fell behind its clock by 40%"],
    )


def test_the_bench_summary_peaks_over_valid_levels_and_notes_a_single_wave() -> None:
    levels = [_level(1, 97.9), _level(32, 5818.0), _level(64, 6191.5, valid=False)]
    summary = bench_summary(levels, Bench(prompts_per_level=256))
    assert "peak 5818.0 output tok/s @c=32" in summary and "6191.5" not in summary
    assert "1 invalid (c=64: the simulator fell behind" in summary
    assert "one wave" not in summary
    wave = bench_summary([_level(1, 53.0), _level(256, 821.5)], Bench(prompts_per_level=256))
    assert "peak 821.5 output tok/s @c=256 (one wave: its 256 prompts start" in wave
    no_valid = bench_summary([_level(8, 10.0, valid=False)], Bench(prompts_per_level=64))
    assert "no valid level" in no_valid
    scaled = Bench(prompts_per_level=256, prompts_per_concurrency=1)
    assert "(one wave: its 32 prompts start" in bench_summary([_level(32, 5818.0)], scaled)
