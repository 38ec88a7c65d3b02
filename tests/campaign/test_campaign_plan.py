"""`repro campaign plan` and the decision: campaign files, points, checks, predictions."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from repro.campaign.decision import PointLevels, decide, slo_boundary
from repro.campaign.execute import eta_left
from repro.campaign.page import render_page
from repro.campaign.plan import (
    IMAGE_PULL_S,
    LAUNCH_OVERHEAD_S,
    WEIGHTS_READ_GB_PER_S,
    plan_campaign,
)
from repro.campaign.predict import prompt_tokens
from repro.campaign.report import NOT_JUDGED, clock, predicted_points, render_terminal
from repro.errors import RecipeError
from repro.lock import load_locked
from repro.recipe.hardware import weights_gb
from repro.recipe.render import render_server_argv
from repro.recipe.rules import check_recipe
from repro.run.simulate import simulated_recipe
from repro.schema.campaign import CampaignIndex, CampaignPlan
from repro.schema.recipe import Bench
from tests.support.browser import layout
from tests.support.cli import isolated_env, repro
from tests.support.simulator import Simulators

DRAFTERS = """
name: ep4-drafters
machine: rtx-pro-6000x8
base: kimi26-ep4-dflash
matrix:
  drafter:
    none: {drafter: null, speculative: null, accept: null}
    z-lab: {drafter.repo: z-lab/Kimi-K2.6-DFlash}
    long: {drafter.repo: SubSir/Kimi-K2.6-DFlash-tmp-long}
  speculative.num_draft_tokens: [8, 16]
exclude:
  - {drafter: long, speculative.num_draft_tokens: 8}
bench:
  concurrencies: [1, 4, 16, 64]
  input_len: 256
  output_len: 64
  dataset: chat
  prompts_per_level: 32
  warmup: 2
slos:
  chat: {p90_ttft_ms: 2000, p90_tpot_ms: 60}
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "campaign.yaml"
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def drafters_plan(repo_root: Path, tmp_path_factory: pytest.TempPathFactory) -> CampaignPlan:
    """DRAFTERS planned and predicted once for the tests that only read it."""
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(repo_root)
        return plan_campaign(_write(tmp_path_factory.mktemp("drafters"), DRAFTERS))


def test_a_matrix_expands_dedupes_baselines_and_excludes(
    repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo_root)
    plan = plan_campaign(_write(tmp_path, DRAFTERS), predict=False)
    names = [p.name for p in plan.points]
    assert len(names) == 5  # 3 drafters x 2 draft-token counts, less one exclusion
    assert not any("long.num_draft_tokens-8" in n for n in names)
    none = [p for p in plan.points if p.labels["drafter"] == "none"]
    # without a drafter the draft-token count renders nothing: one server, measured once
    assert len(none) == 2 and sum(p.same_server_as is None for p in none) == 1
    baseline = next(p.name for p in none if p.same_server_as is None)
    for point in plan.points:
        if point.drafter is not None:
            assert point.baseline == baseline
    # grouped so that each drafter is loaded once: points of a drafter sit together
    drafters = [p.drafter or "" for p in plan.points]
    assert drafters == sorted(drafters)


def test_a_point_that_swaps_the_drafter_drops_the_replaced_drafters_facts(
    repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo_root)
    plan = plan_campaign(_write(tmp_path, DRAFTERS), tmp_path / "recipes", predict=False)
    for point in plan.points:
        drafter = yaml.safe_load((tmp_path / point.recipe).read_text()).get("drafter")
        if point.labels["drafter"] == "z-lab":  # the base recipe's own drafter: its facts kept
            assert drafter["facts"]["vocab_size"] == 163840
        elif point.labels["drafter"] == "long":
            assert drafter["repo"] == "SubSir/Kimi-K2.6-DFlash-tmp-long"
            assert "facts" not in drafter


def test_an_invalid_point_refuses_the_campaign_naming_the_point(
    repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo_root)
    bad = DRAFTERS.replace("speculative.num_draft_tokens: [8, 16]", "parallelism.tp: [8, 3]")
    bad = bad.replace("exclude:\n  - {drafter: long, speculative.num_draft_tokens: 8}\n", "")
    with pytest.raises(RecipeError) as caught:
        plan_campaign(_write(tmp_path, bad), predict=False)
    assert "tp-3" in caught.value.message and "tp-8" not in caught.value.message


@pytest.mark.parametrize(
    ("edit", "replacement", "said"),
    [
        (
            "chat: {p90_ttft_ms",
            "chat: {p95_ttft_ms",
            "slos: SLO chat: 'p95_ttft_ms' is not a latency key",
        ),
        ("machine: rtx", "machin: rtx", "'machin' (did you mean 'machine'?) (line 3)"),
    ],
)
def test_a_bad_campaign_file_names_the_file_the_field_and_what_was_expected(
    repo_root: Path, tmp_path: Path, edit: str, replacement: str, said: str
) -> None:
    path = _write(tmp_path, DRAFTERS.replace(edit, replacement))
    result = repro("campaign", "plan", str(path), "--no-predict", cwd=repo_root)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert f"{path}: " in result.stderr and said in result.stderr


def test_the_layouts_campaign_is_predicted_in_80_columns_with_a_best_per_column(
    repo_root: Path,
) -> None:
    result = repro("campaign", "plan", "campaigns/kimi26-layouts.yaml", cwd=repo_root, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines)
    notes = [line for line in lines if line.startswith("  kimi26-")]  # each point's source
    assert notes and not any(line.endswith(" ") for line in notes)  # copied without padding
    header = next(line for line in lines if line.startswith("point"))
    assert header.split()[1:] == ["1", "2", "4", "8", "16", "32", "64", "128", "256"]
    rows = [line.split() for line in lines if len(line.split()) == 10]  # a name and 9 levels
    assert {row[0] for row in rows} >= {"kimi26-tp8", "kimi26-ep4", "kimi26-pp8", "kimi26-ep8"}
    # each column has exactly one best mark among the five layouts
    table = lines[lines.index(header) + 2 : lines.index(header) + 9]
    marks = sum(cell.endswith(("*", "*^")) for line in table for cell in line.split()[1:])
    assert marks == 9
    assert "predicted (kimi26-ep4-rtx6000)" in result.stdout
    assert "estimate:" in result.stdout and "GPU-hours" in result.stdout
    # each caveat beside its number: EP4's calibration point next to its c=256 level and
    # why they differ; EP8's profile is derived by a rule, so its ranking is assumed
    text = " ".join(result.stdout.split())
    ep4 = text[text.index("kimi26-ep4: predicted") :]
    assert ep4.startswith(
        "kimi26-ep4: predicted (kimi26-ep4-rtx6000); calibrated: 1530 tok/s in steady decode "
        "at 256 running (the model gives 1536.6); the c=256 level predicts "
    )
    assert "its 256 prompts are sent at once and pay their prefill" in ep4.split("\n")[0]
    assert (
        "kimi26-ep8: predicted (kimi26-ep8-rtx6000); ranking assumed: profile "
        "kimi26-ep8-rtx6000 is derived by a rule, not measured" in text
    )
    assert "time scale: 1 (predicted in the simulator's virtual time" in text


def test_a_table_wider_than_the_terminal_folds_names_then_stacks_never_losing_a_level(
    repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo_root)
    plan = plan_campaign(repo_root / "campaigns" / "kimi26-b200.yaml")
    points = predicted_points(plan)
    decision = decide(points, plan.campaign.slos)
    peaks = {p.name: f"{decision.peak[p.name]:.0f}" for p in points}
    assert decision.concurrencies[-1] == 256
    for width in (80, 50):  # the names fold at 80; at 50 each point is a block of its own
        console = Console(width=width, record=True, file=io.StringIO())
        console.print(render_terminal(decision, points))
        text = console.export_text()
        assert all(len(line) <= width for line in text.splitlines()), text
        assert "…" not in text
        for name, peak in peaks.items():  # the peak is at c=256: its column is there, whole
            assert decision.table[name][256] == decision.peak[name]
            assert re.search(rf"(^|\s){peak}\*?\^", text, re.MULTILINE), (width, text)
        if width == 80:
            header = next(line for line in text.splitlines() if line.startswith("point"))
            assert header.split()[-1] == "256"
        else:
            assert re.search(r"^256\s+\d+\*?\^", text, re.MULTILINE), text
    # the decision page of these nine levels and long names, in an 800 px window
    page = tmp_path / "campaign.html"
    page.write_text(render_page(decision, points, []))
    laid_out = layout(page, tmp_path / "profile", 800)
    assert laid_out.width <= 800 and laid_out.broken == []
    for peak in peaks.values():  # every level's column is on the page, the peaks with them
        assert re.search(rf"<td class=\"n( best)?\">{peak}\*?\^</td>", page.read_text())


def test_the_plan_as_json_carries_predicted_levels_and_the_profiles_provenance(
    repo_root: Path, tmp_path: Path
) -> None:
    result = repro("campaign", "plan", str(_write(tmp_path, DRAFTERS)), "--json", cwd=repo_root)
    assert result.returncode == 0, result.stderr[-2000:]
    plan = json.loads(result.stdout)
    measured = [p for p in plan["points"] if p["same_server_as"] is None]
    for point in measured:
        assert point["provenance"].startswith(("calibrated", "extrapolated"))
        assert [lv["max_concurrency"] for lv in point["predicted"]] == [1, 4, 16, 64]
    assert plan["estimate_s"] > 0 and plan["gpu_hours"] > 0


def test_the_decision_finds_each_drafters_crossover_against_its_baseline(
    drafters_plan: CampaignPlan,
) -> None:
    plan = drafters_plan
    points = predicted_points(plan)
    decision = decide(points, plan.campaign.slos)
    drafters = [p for p in points if p.drafter]
    assert {c.point for c in decision.crossovers} == {p.name for p in drafters}
    for cross in decision.crossovers:
        ratios = [cross.speedups[c] for c in sorted(cross.speedups)]
        if cross.concurrency is not None:  # it paid below the crossing and lost above it
            assert any(r > 1 for r in ratios) and any(r <= 1 for r in ratios)
            lower = max(c for c in cross.speedups if c <= cross.concurrency)
            assert cross.speedups[lower] > 1.0
        elif all(r > 1 for r in ratios):  # no crossing: the verdict names the least speedup
            least = min(cross.speedups, key=lambda c: cross.speedups[c])
            # predicted on an assumed acceptance: no interval, the assumption named
            assert f"(least {cross.speedups[least]:.3f}x at c={least}) " in cross.verdict
        assert "95%" not in cross.verdict and cross.interval is None
        assert "[assumed: speculative DFLASH (acceptance and drafter cost)" in cross.verdict
        assert all(cross.accept_lengths[c] for c in cross.speedups)
    # the frontier holds no level another level beats on both axes
    for a in decision.frontier:
        assert not any(
            b.tok_s_per_user > a.tok_s_per_user and b.tok_s_per_gpu > a.tok_s_per_gpu
            for b in decision.frontier
        )


def test_the_slo_boundary_lies_between_the_last_level_that_meets_it_and_the_first_that_fails(
    drafters_plan: CampaignPlan,
) -> None:
    plan = drafters_plan
    point = predicted_points(plan)[0]
    ttfts = sorted((lv.concurrency, lv.p90_ttft_ms or 0) for lv in point.levels)
    limit = (ttfts[1][1] + ttfts[2][1]) / 2  # between the second and third level
    bound = slo_boundary(point, {"p90_ttft_ms": limit})
    assert bound.meets_up_to == ttfts[1][0] and bound.fails_from == ttfts[2][0]
    assert bound.estimate is not None and ttfts[1][0] <= bound.estimate <= ttfts[2][0]
    invalid = point.model_copy(deep=True)
    for level in invalid.levels:
        level.valid = False
    assert decide([invalid], {"x": {"p90_ttft_ms": limit}}).slo_winners[0].point is None


def test_points_of_two_machines_are_compared_at_equal_interactivity(
    drafters_plan: CampaignPlan,
) -> None:
    plan = drafters_plan
    slow = predicted_points(plan)[0]
    fast = slow.model_copy(deep=True, update={"name": "b300/x", "machine": "b300"})
    for level in fast.levels:  # twice the speed per user and per GPU at every level
        level.output_throughput *= 2
        level.output_throughput_per_user = (level.output_throughput_per_user or 0) * 2
        level.output_throughput_per_gpu = (level.output_throughput_per_gpu or 0) * 2
    speeds = [s for lv in slow.levels if (s := lv.output_throughput_per_user)]
    at = sorted(speeds)[len(speeds) // 2]
    decision = decide([slow, fast], {}, speeds=(at,))
    ours, theirs = decision.at_interactivity[slow.name][at], decision.at_interactivity["b300/x"][at]
    assert ours is not None and theirs is not None and theirs > ours
    assert all(f.machine == "b300" for f in decision.frontier)


def test_the_ddtree_budgets_are_predicted_on_their_images_options_near_the_users_numbers(
    repo_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo_root)
    plan = plan_campaign(repo_root / "campaigns" / "qwen36-ddtree-budgets.yaml")
    points = {p.name: p for p in plan.points}
    # the users measured 173.4 tok/s at budget 15 (a chain) and 64.3 at budget 64 (a tree)
    for name, measured in (
        ("qwen36-27b-tp1-dflash-ddtree", 173.4),
        ("qwen36-27b-tp1-dflash-ddtree-tree64", 64.3),
    ):
        point = points[name]
        assert point.profile == "qwen36-27b-tp1-rtx6000", point.prediction_error
        single = next(lv for lv in point.predicted if lv.concurrency == 1)
        assert single.mean_tpot_ms is not None
        assert abs(1000.0 / single.mean_tpot_ms / measured - 1) <= 0.05  # decode alone
        assert single.output_throughput < 1000.0 / single.mean_tpot_ms  # prefill counted
        assert point.caveats[0].startswith(f"calibrated: {measured:g} tok/s in steady decode")
        assert "it counts each request's prefill" in point.caveats[0]
        # what is left between decode alone and the calibration is the level's acceptance:
        # its tokens per verify step against the model's mean, said beside the number
        found = re.search(
            r"the model gives ([\d.]+)\).* at ([\d.]+) tokens a verify step where the "
            r"model's mean is ([\d.]+) \(the draws of 64 requests, each one's last step cut "
            r"at 512 tokens\)",
            " ".join(point.caveats[0].split()),
        )
        assert found, point.caveats[0]
        model, drawn, mean = (float(g) for g in found.groups())
        assert drawn == pytest.approx(single.accept_length, abs=0.005)
        decode = 1000.0 / single.mean_tpot_ms
        assert decode * mean / drawn == pytest.approx(model, rel=0.01)
    chain, tree = (
        points[n].predicted[0]
        for n in ("qwen36-27b-tp1-dflash-ddtree", "qwen36-27b-tp1-dflash-ddtree-tree64")
    )
    assert chain.accept_length is not None and tree.accept_length is not None
    assert chain.accept_length > 2 * tree.accept_length  # the tree accepts less a step
    assert plan.estimate_s and not plan.unestimated
    # plain DFLASH is measured on no layout of this profile: its ranking is an assumption
    assert points["qwen36-27b-tp1-dflash"].caveats == [
        "ranking assumed: no measurement of qwen36-27b-tp1-rtx6000 covers speculative "
        "DFLASH (acceptance and drafter cost assumed)"
    ]


def test_a_level_on_other_prompts_than_the_calibrations_says_so_beside_its_acceptance(
    repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo_root)
    text = "points:\n  - recipe: qwen36-27b-tp1-dflash-ddtree\n    set: {accept: null}\n"
    plan = plan_campaign(_write(tmp_path, "machine: m\n" + text + TINY_BENCH))
    [point] = plan.points
    caveat = " ".join(point.caveats[0].split())
    assert caveat.startswith("calibrated: 173.4 tok/s in steady decode at 1 running")
    found = re.search(
        r"at ([\d.]+) tokens a verify step where the model's mean is ([\d.]+)", caveat
    )
    assert found, caveat
    assert float(found.group(2)) < 2  # random tokens accept little (1.3; chat 7.41)
    assert caveat.endswith("(random prompts; the calibration's were chat)")


def test_the_simulated_twin_of_a_ddtree_recipe_has_its_images_options(
    repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo_root)
    twin = simulated_recipe("qwen36-27b-tp1-dflash-ddtree-tree64", tmp_path, None, 1.0)
    locked = load_locked(twin)
    assert locked.recipe.image == "sim-sglang-0.5.15-cu13-ddtree"
    assert locked.catalog is not None and locked.catalog.sglang_version == "0.5.15"
    assert "DDTREE" in locked.catalog.speculative_algorithms
    assert "UNO" not in locked.catalog.speculative_algorithms  # 0.5.23's, not 0.5.15's
    assert not [f for f in check_recipe(locked) if f.severity == "error"]
    argv = render_server_argv(locked.recipe, locked.catalog)
    assert argv[argv.index("--speculative-ddtree-budget") + 1] == "64"
    # the stand-in image's patch makes the simulator's SGLang report 0.5.15 and know DDTREE
    patch = (tmp_path / "patches" / "sim-ddtree" / "0001-stand-in.patch").read_text()
    assert '+__version__ = "0.5.15"' in patch and "+    DDTREE = auto()" in patch
    assert "-    UNO = auto()" in patch


TINY_BENCH = """
bench:
  concurrencies: [1]
  input_len: 64
  output_len: 16
  dataset: random
  prompts_per_level: 2
  warmup: 0
"""

ONE_UNPREDICTED = (
    """
name: one-unpredicted
machine: mixed
points:
  - recipe: qwen36-27b-tp1-dflash
    set: {drafter: null, speculative: null, accept: null}
    name: plain
  - recipe: kimi26-tp8-b300
    set: {topology.gpu_models: [H200]}
"""
    + TINY_BENCH
)


def test_a_point_without_a_prediction_keeps_the_others_estimate_and_exits_9(
    repo_root: Path, tmp_path: Path
) -> None:
    campaign = str(_write(tmp_path, ONE_UNPREDICTED))
    result = repro("campaign", "plan", campaign, cwd=repo_root, timeout=300)
    assert result.returncode == 9, result.stderr[-2000:]
    text = " ".join(result.stdout.split())
    assert (
        "kimi26-tp8-b300: no prediction: no profile is of nvidia/Kimi-K2.6-NVFP4, tp8 on H200; "
        "closest: kimi26-nvfp4-tp8-b300 (GPU B300); plan on it with --profile "
        "kimi26-nvfp4-tp8-b300"
    ) in text
    assert "estimate (1 of 2 points):" in text
    assert "not in the estimate (no prediction): kimi26-tp8-b300" in text
    as_json = repro("campaign", "plan", campaign, "--json", cwd=repo_root, timeout=300)
    assert as_json.returncode == 9
    plan = json.loads(as_json.stdout)
    assert plan["estimate_s"] > 0 and plan["unestimated"] == ["kimi26-tp8-b300"]


LOADS = (
    """
name: loads
machine: rtx-pro-6000x1
points:
  - recipe: qwen36-27b-tp1-dflash
    set: {drafter: null, speculative: null, accept: null}
    name: plain
  - recipe: qwen36-27b-tp1-dflash
    name: declared
    set: {drafter.weights_gb: 30, accept: null}
  - recipe: qwen36-27b-tp1-dflash
    name: swapped
    set: {drafter.repo: someone/unsized-drafter, accept: null}
  - recipe: qwen36-27b-tp1-dflash-ddtree
    name: other-image
    set: {accept: null}
"""
    + TINY_BENCH
)


def test_the_estimate_loads_each_drafter_at_the_models_rate_and_pulls_each_image_once(
    repo_root: Path, tmp_path: Path
) -> None:
    result = repro("campaign", "plan", str(_write(tmp_path, LOADS)), "--json", cwd=repo_root)
    assert result.returncode == 0, result.stderr[-2000:]
    plan = CampaignPlan.model_validate_json(result.stdout)
    points = {p.name: p for p in plan.points}
    plain = points["plain"]
    assert (
        plain.drafter_load_s == 0 and plain.load_s == LAUNCH_OVERHEAD_S + 56 / WEIGHTS_READ_GB_PER_S
    )
    # the shipped drafter's known size, one a point declares, one of unknown size (not the
    # replaced drafter's: a point that swaps the repo drops the size it inherited)
    known = points["other-image"]
    assert known.drafter_load_s == pytest.approx(weights_gb("z-lab/Qwen3.6-27B-DFlash", None))
    assert points["declared"].drafter_load_s == pytest.approx(30 / WEIGHTS_READ_GB_PER_S)
    swapped = points["swapped"]
    assert swapped.drafter_load_s == 0 and swapped.unknown_weights == ["someone/unsized-drafter"]
    for point in (known, points["declared"]):
        assert point.load_s == pytest.approx(plain.load_s + (point.drafter_load_s or 0))
    # two images, each pulled once, on the first point that runs it
    pulls = [p.image_s for p in plan.points]
    assert sorted(pulls) == [0.0, 0.0, IMAGE_PULL_S, IMAGE_PULL_S]
    parts = plan.estimate_parts
    assert parts is not None and parts.images == 2 and parts.drafters == 2
    assert parts.unknown_weights == ["someone/unsized-drafter"]
    total = parts.levels_s + parts.warmups_s + parts.accept_s + parts.starts_s + parts.model_load_s
    total += parts.drafter_load_s + parts.images_s
    assert plan.estimate_s == pytest.approx(total)
    text = repro("campaign", "plan", str(tmp_path / "campaign.yaml"), cwd=repo_root)
    said = " ".join(text.stdout.split())
    assert "assumed: 4 server starts 6m00s, 2 image pulls 10m00s" in said
    assert "the drafters' 34s (2 loads)" in said
    assert "not counted, size unknown: someone/unsized-drafter" in said


def test_points_that_measured_no_clock_are_tabulated_but_never_ranked(
    drafters_plan: CampaignPlan,
) -> None:
    plan = drafters_plan
    points = predicted_points(plan)
    for point in points:
        point.time_scale = 0.0
    decision = decide(points, plan.campaign.slos, clock=clock({0.0}))
    assert decision.table and all(decision.table.values())  # every number still shown
    assert not (decision.best or decision.peak or decision.frontier or decision.crossovers)
    assert not decision.slo_winners
    assert decision.unranked == [p.name for p in points]
    shown = Console(width=80, record=True)
    shown.print(render_terminal(decision, points))
    text = " ".join(shown.export_text().split())
    below_title = text.split("the point's peak)", 1)[1]  # no cell marked best or peak
    assert "*" not in below_title and "^" not in below_title
    assert "Pareto frontier" not in text and "SLO chat" not in text
    assert "time scale: 0 (simulated without waiting: its numbers measure only this host" in text
    assert clock({None, 0.5}) == "1 (measured on the machine's own clock); 0.5 (simulated)"


def _index(time_scale: float) -> CampaignIndex:
    return CampaignIndex(
        campaign="c", machine="m", simulated=True, time_scale=time_scale, points=[]
    )


def test_the_eta_counts_the_accept_stage_and_leaves_out_what_a_resumed_point_finished(
    drafters_plan: CampaignPlan,
) -> None:
    plan = drafters_plan
    point = next(p for p in plan.points if p.drafter and p.same_server_as is None)
    assert point.accept_s and point.levels_s and point.warmups_s and point.estimate_s
    # the loads, and each level's warm-up (2 requests before its 32)
    assert point.estimate_s > point.accept_s + point.warmups_s + point.levels_s
    assert point.warmups_s > point.levels_s / 32
    real = CampaignIndex(campaign="c", machine="m", points=[])
    assert eta_left(point, real, set()) == point.estimate_s
    first = point.predicted[0]
    resumed = eta_left(point, real, {(first.concurrency, first.repeat)})
    warmup = point.warmups_s / len(point.predicted)  # a level's share
    done = point.accept_s + (point.image_s or 0) + warmup + first.duration
    assert resumed == pytest.approx(point.estimate_s - done)
    sim = _index(0.5)
    fresh, later = eta_left(point, sim, set()), eta_left(point, sim, {(first.concurrency, 0)})
    assert fresh - later == pytest.approx((point.accept_s + warmup + first.duration) * 0.5)


def test_predicted_points_say_what_they_are(
    repo_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo_root)
    plan = plan_campaign(repo_root / "campaigns" / "kimi26-layouts.yaml", predict=False)
    points: list[PointLevels] = predicted_points(plan)
    assert {p.source for p in points} == {"not predicted"}


@pytest.mark.parametrize(
    "campaign", sorted(p.name for p in (Path(__file__).parents[2] / "campaigns").glob("*.yaml"))
)
def test_every_shipped_campaign_checks_clean_and_pairs_its_drafters(
    repo_root: Path, monkeypatch: pytest.MonkeyPatch, campaign: str
) -> None:
    monkeypatch.chdir(repo_root)
    plan = plan_campaign(repo_root / "campaigns" / campaign, predict=False)
    assert plan.points
    for point in plan.points:
        if point.drafter is not None and "layouts" not in campaign:
            assert point.baseline is not None, f"{point.name} has no baseline to compare with"


FORCED = """
name: ep4-forced
machine: rtx-pro-6000x8
base: kimi26-ep4-dflash
matrix:
  speculative.forced_acceptance.length: [1, 4]
bench:
  concurrencies: [1, 16]
  input_len: 256
  output_len: 97
  dataset: chat
  prompts_per_level: 16
  warmup: 0
"""


def test_a_points_forced_acceptance_reaches_its_prediction(
    repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SGLANG_SIMULATE_ACC_LEN from the point's recipe: the predicted acceptance is the
    forced length (96 tokens after the prefill's are whole steps of 1 and of 4), and forcing
    4 accepted tokens a step is faster than forcing 1."""
    monkeypatch.chdir(repo_root)
    plan = plan_campaign(_write(tmp_path, FORCED))
    points = {p.name: p for p in predicted_points(plan)}
    by_length = {}
    for name, point in points.items():
        if not point.drafter:
            continue
        length = 4 if name.endswith(".length-4") else 1
        by_length[length] = point
        for level in point.levels:
            assert level.accept_length == pytest.approx(length, rel=0.02), (name, level)
    assert set(by_length) == {1, 4}
    for slow, fast in zip(by_length[1].levels, by_length[4].levels, strict=True):
        assert fast.output_throughput > slow.output_throughput


def test_the_campaigns_search_narrows_each_points_slo_boundary_in_the_prediction(
    repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo_root)
    tight = {"p90_ttft_ms": 500.0}  # predicted: met at c=4, missed at c=16, by every point
    text = DRAFTERS + "  tight: {p90_ttft_ms: 500}\n"
    ladder = predicted_points(plan_campaign(_write(tmp_path, text)))
    searched_file = _write(tmp_path, text + "search: {slo: tight, extra_levels: 2}\n")
    searched = {p.name: p for p in predicted_points(plan_campaign(searched_file))}
    for point in ladder:
        before = slo_boundary(point, tight)
        after = slo_boundary(searched[point.name], tight)
        added = {lv.concurrency for lv in searched[point.name].levels} - {1, 4, 16, 64}
        assert (before.meets_up_to, before.fails_from) == (4, 16)
        assert added == {8} | ({6} if after.fails_from == 8 else {11})  # log midpoints
        assert after.meets_up_to and after.fails_from
        assert after.fails_from / after.meets_up_to < 2


def test_a_search_naming_an_unknown_slo_is_refused(tmp_path: Path) -> None:
    bad = _write(tmp_path, DRAFTERS + "search: {slo: batch}\n")
    with pytest.raises(RecipeError, match=r"search\.slo 'batch' is not one of the campaign's slos"):
        plan_campaign(bad, predict=False)


@pytest.mark.parametrize("dataset", ["chat", "random"])
def test_the_prediction_weighs_prompts_as_the_simulator_counts_them(
    simulator: Simulators, tmp_path: Path, dataset: str
) -> None:
    """The chat set is fitted to input_len words, which the simulator counts as ~1.35x the
    tokens: a prediction at input_len itself came out 8% fast at c=16 (kimi26-tp8)."""
    server = simulator.tiny()
    try:
        result = repro(
            "bench", "--url", server.url, "--dataset", dataset, "--input-len", "512",
            "--output-len", "4", "--prompts", "16", "--concurrency", "4", "--json",
            "--output", str(tmp_path / "run"), cwd=tmp_path, env=isolated_env(tmp_path),
        )  # fmt: skip
    finally:
        server.stop()
    assert result.returncode == 0, result.stderr[-2000:]
    [level] = json.loads(result.stdout)["levels"]
    served = level["total_prompt_tokens"] / level["completed"]
    predicted = prompt_tokens(Bench(dataset=dataset, input_len=512))
    assert abs(predicted - served) / served < 0.05, (predicted, served)


def test_a_plan_that_predicted_nothing_judges_no_slo(
    repo_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo_root)
    plan = plan_campaign(repo_root / "campaigns" / "kimi26-layouts.yaml", predict=False)
    points = predicted_points(plan)
    console = Console(width=200, record=True)
    console.print(render_terminal(decide(points, plan.campaign.slos), points))
    text = console.export_text()
    assert "no level of any point meets it" not in text
    assert text.count(NOT_JUDGED) == len(plan.campaign.slos)
