"""Assumed stays assumed: an assumed input is named in every verdict it feeds (terminal, JSON,
page), no interval is printed on it, and a campaign's page carries every caveat its plan
prints."""

from __future__ import annotations

import html
import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from repro.campaign.decision import decide
from repro.campaign.page import render_page
from repro.campaign.plan import plan_campaign
from repro.campaign.report import predicted_points, render_terminal
from tests.support.cli import isolated_env, repro

from .demo import only_folder


def _text(renderable: object) -> str:
    console = Console(width=80, record=True, file=io.StringIO())
    console.print(renderable)
    return " ".join(console.export_text().split())


def test_no_interval_is_printed_on_an_assumed_quantity(
    repo_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo_root)
    plan = plan_campaign(repo_root / "campaigns" / "kimi26-b200.yaml")
    points = predicted_points(plan)
    profile = "every number of profile kimi26-tp8-b200 (derived by a rule)"
    label = f"[assumed: {profile}"  # and what else a point assumes (its draft tokens)
    assert all(p.assumed[0] == profile for p in points)
    decision = decide(points, plan.campaign.slos)
    [cross] = decision.crossovers
    terminal = _text(render_terminal(decision, points))
    page = html.unescape(render_page(decision, points, []))
    as_json = json.loads(decision.model_dump_json())
    assert "95%" not in terminal and "95%" not in page and cross.interval is None
    assert "vs kimi26-tp8-b200: pays at every level up to c=256 (least " in terminal
    assert label in cross.verdict and cross.verdict.endswith("]") and cross.verdict in terminal
    for winner in as_json["slo_winners"]:  # each SLO's winner, in all three
        assert winner["assumed"][0] == profile
        shown = f"{winner['point']} at c={winner['concurrency']}"
        assert re.search(rf"{re.escape(shown)}, [\d.]+ output tok/s per GPU {re.escape(label)}",
                         terminal)  # fmt: skip
        assert re.search(rf"{re.escape(shown)}, [\d.]+ output tok/s per GPU {re.escape(label)}",
                         page)  # fmt: skip
    assert as_json["crossovers"][0]["assumed"] and label in as_json["crossovers"][0]["verdict"]
    # the same levels taken as measured: the interval is stated, nothing is labelled
    measured = [p.model_copy(update={"assumed": []}) for p in points]
    again = decide(measured, plan.campaign.slos)
    assert "95% " in again.crossovers[0].verdict and "[assumed" not in again.crossovers[0].verdict


def test_the_ep4_caveat_marks_the_prefill_assumed_beside_steady_decode(
    repo_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo_root)
    plan = plan_campaign(repo_root / "campaigns" / "kimi26-layouts.yaml")
    ep4 = next(p for p in plan.points if p.name == "kimi26-ep4")
    [calibrated] = ep4.caveats
    assert re.search(
        r"the c=256 level predicts \d+ beside 1537 in steady decode: its 256 prompts are sent "
        r"at once and pay their prefill \([\d.]+ s median to the first token, at an assumed "
        r"prefill speed of ~5,000 tok/s\) before decode",
        calibrated,
    ), calibrated
    assert ep4.assumed == ["prefill speed"]
    nograph = next(p for p in plan.points if p.name == "kimi26-tp8-nograph")
    assert nograph.assumed == ["CUDA graphs off (fixed cost x2.5)", "prefill speed"]


CAMPAIGN = """
name: assumed-page
machine: rtx-pro-6000x8
points: [{recipe: kimi26-tp8}, {recipe: kimi26-tp8-nograph}, {recipe: kimi26-ep4}]
bench: {concurrencies: [1], input_len: 64, output_len: 8, dataset: chat,
        prompts_per_level: 4, warmup: 1}
slos:
  chat: {p90_ttft_ms: 600000}
"""


@pytest.mark.docker
def test_the_page_carries_every_caveat_the_plan_prints(repo_root: Path, tmp_path: Path) -> None:
    env = isolated_env(tmp_path)
    campaign = tmp_path / "assumed.yaml"
    campaign.write_text(CAMPAIGN)
    planned = repro("campaign", "plan", str(campaign), "--json", cwd=repo_root, env=env)
    assert planned.returncode == 0, planned.stderr[-2000:]
    caveats = [c for p in json.loads(planned.stdout)["points"] for c in p["caveats"]]
    assert any(c.startswith("ranking assumed: ") for c in caveats)  # tp8-nograph's
    run = repro(
        "campaign", "run", str(campaign), "--sim", "--time-scale", "0.05",
        "--campaigns-dir", str(tmp_path / "campaigns"), cwd=repo_root, env=env,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    folder = only_folder(tmp_path / "campaigns")
    report = repro("campaign", "report", str(folder), cwd=repo_root, env=env)
    assert report.returncode == 0, report.stderr[-3000:]
    page = html.unescape((folder / "report" / "campaign.html").read_text())
    terminal = " ".join(report.stdout.split())
    for caveat in caveats:
        assert caveat in page and caveat in terminal
    # the engine row names each profile once, by what it is (tp8-nograph's run on the
    # calibrated profile is extrapolated: an assumed input, not another kind of profile)
    [engine] = re.findall(r"<th>engine</th><td>(.*?)</td>", page)
    assert engine.count("kimi26-tp8-rtx6000") == 1 and "extrapolated" not in engine
    assert "sim kimi26-tp8-rtx6000 (calibrated)" in engine
    assert re.search(r"Winner: kimi26-[\w-]+ at c=1, [\d.]+ output tok/s per GPU \[assumed: ", page)
