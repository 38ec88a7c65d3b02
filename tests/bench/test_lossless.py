"""The lossless check (`repro accept R --baseline B --check-lossless`) against the simulator,
with a lossless drafter and with the lossy fault switch; and the paired drafter A/B."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from repro.bench.accept.runner import AcceptOptions, lossless_failure, run_accept
from repro.bench.accept.stats import first_divergence, paired_difference
from repro.bench.target import BenchTarget
from repro.cli import main
from repro.runfolder import RunFolder
from repro.schema.accept import AcceptSet
from tests.support.simulator import DFLASH, Sim, Simulators


@pytest.fixture(scope="module")
def sim_lossy(simulator: Simulators) -> Iterator[Sim]:
    server = simulator.tiny(*DFLASH,
        REPRO_SIM_TIME_SCALE="0.05", REPRO_SIM_LOSSY_DRAFTER="1",
    )  # fmt: skip
    yield server
    server.stop()


def _opts(url: str, baseline: str, runs: Path) -> AcceptOptions:
    return AcceptOptions(
        urls=[url], prompt_sets=["math", "chat"], prompts=3, max_new_tokens=24,
        baseline=BenchTarget.from_url(baseline), check_lossless=True, runs_dir=runs,
    )  # fmt: skip


def test_speculation_keeps_the_greedy_output(
    sim_spec: Sim, sim_plain: Sim, demo: Any, runs: Path
) -> None:
    (result,) = run_accept(
        [BenchTarget.from_recipe(demo)], _opts(sim_spec.url, sim_plain.url, runs)
    )
    check = json.loads(RunFolder(result.run_dir).accept_file.read_text())["lossless"]
    assert check["passed"] is True
    # the run's concurrency, then demo's top bench concurrency (16), with 16 requests
    assert [(lv["concurrency"], lv["prompts"]) for lv in check["levels"]] == [(1, 6), (16, 16)]
    assert all(lv["identical_share"] == 1.0 for lv in check["levels"])
    assert lossless_failure(result.results.lossless) is None


def test_a_lossy_drafter_fails_naming_the_prompt_and_position(
    sim_lossy: Sim, sim_plain: Sim, demo: Any, runs: Path
) -> None:
    (result,) = run_accept(
        [BenchTarget.from_recipe(demo)], _opts(sim_lossy.url, sim_plain.url, runs)
    )
    check = result.results.lossless
    assert check is not None and check.passed is False
    first = check.levels[0].divergent[0]
    assert (first.prompt_set, first.prompt) == ("math", 0) and first.position >= 1
    message = lossless_failure(check)
    assert message is not None
    assert f"prompt 0 of set 'math' at output token {first.position}" in message


def test_cli_lossless_exit_codes(
    sim_spec: Sim, sim_lossy: Sim, sim_plain: Sim, tmp_path: Path,
    repo_root: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setenv("REPRO_RECIPES_DIR", str(repo_root / "recipes"))
    monkeypatch.chdir(tmp_path)
    base = ["accept", "demo", "--prompt-sets", "code", "-n", "2", "--max-new-tokens", "16",
            "--baseline", sim_plain.url, "--check-lossless"]  # fmt: skip
    ok = CliRunner().invoke(main, [*base, "--url", sim_spec.url])
    assert ok.exit_code == 0, ok.output
    assert "lossless at concurrency 1: 2/2 outputs identical" in ok.output
    bad = CliRunner().invoke(main, [*base, "--url", sim_lossy.url])
    assert bad.exit_code != 0
    assert "lossless check failed at concurrency 1" in bad.output
    assert "prompt 0 of set 'code'" in bad.output
    missing = CliRunner().invoke(main, ["accept", "demo", "--url", sim_spec.url,
                                        "--check-lossless"])  # fmt: skip
    assert missing.exit_code != 0 and "needs a --baseline" in missing.output


def test_first_divergence() -> None:
    assert first_divergence([1, 2, 3], [1, 2, 3]) is None
    assert first_divergence([1, 2, 3], [1, 5, 3]) == 1
    assert first_divergence([1, 2], [1, 2, 3]) == 2


def _set(values: list[float]) -> AcceptSet:
    return AcceptSet(prompt_set="gsm8k", prompts=len(values), completion_tokens=0,
                     spec_verify_ct=0, accept_length=None,
                     accept_length_per_prompt=values)  # fmt: skip


def test_paired_difference_tells_a_better_drafter_from_noise() -> None:
    a = [3.0, 4.0, 5.0, 3.5, 4.5, 6.0, 2.5, 4.0]
    better = paired_difference("A", _set(a), "B", _set([x + 0.5 for x in a]))
    assert better.verdict == "b better" and better.difference == pytest.approx(0.5)
    assert better.ci95 is not None and better.ci95.low > 0
    jitter = [0.4, -0.5, 0.3, -0.2, 0.1, -0.3, 0.2, 0.0]
    noisy = paired_difference(
        "A", _set(a), "B", _set([x + d for x, d in zip(a, jitter, strict=True)])
    )
    assert noisy.verdict == "within noise"
    worse = paired_difference("A", _set(a), "B", _set([x - 1 for x in a]))
    assert worse.verdict == "a better" and worse.pairs == 8
