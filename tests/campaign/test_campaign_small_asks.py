"""What a user meets on the way: `repro report --against-plan` points to the command that has
it, the decision page's plots keep every label inside 800 px, and `tiny-model` says in one
line what its twins are for."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from click.testing import CliRunner
from PIL import Image

from repro.campaign.decision import decide
from repro.campaign.page import _write_plots
from repro.campaign.plan import plan_campaign
from repro.campaign.report import predicted_points
from repro.cli import main

LONG_NAMED = ("campaigns/qwen36-ddtree-budgets.yaml", "campaigns/kimi26-ep4-drafters.yaml")


def test_report_against_plan_names_the_campaign_command(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["report", str(tmp_path), "--against-plan"])
    assert result.exit_code == 2
    assert "No such option" not in result.output
    assert "repro campaign report FOLDER --against-plan" in result.output
    assert max(len(line) for line in result.output.splitlines()) <= 80


def test_the_decision_plots_keep_every_label_inside_800_px(repo_root: Path, tmp_path: Path) -> None:
    """Two machines' campaigns side by side: the longest point names of the seeds, whole, in
    a legend below the axes; nothing is drawn on the image's edge (a cut label would be)."""
    points, slos = [], {}
    for file in LONG_NAMED:
        plan = plan_campaign(repo_root / file)
        for point in predicted_points(plan):
            point.name = f"{point.machine}/{point.name}"
            point.baseline = f"{point.machine}/{point.baseline}" if point.baseline else None
            points.append(point)
        slos.update(plan.campaign.slos)
    longest = max(len(p.name) for p in points)
    assert longest > 48  # longer than a legend inside the axes could hold
    plots = _write_plots(tmp_path, decide(points, slos), points, simulated=True)
    assert {p.name for p in plots} == {"frontier.png", "crossover.png"}
    for path in plots:
        pixels = np.asarray(Image.open(path).convert("L"))
        width = pixels.shape[1]
        assert width <= 800, path
        edges = np.concatenate([pixels[:, :2].ravel(), pixels[:, -2:].ravel(), pixels[-2:].ravel()])
        assert edges.min() >= 250, f"{path.name}: something is drawn on the image's edge"


def test_tiny_model_says_what_its_twins_are_for() -> None:
    result = CliRunner().invoke(main, ["image", "tiny-model", "--help"])
    assert result.exit_code == 0
    assert "for: `repro recipe check` and serving tests" in " ".join(result.output.split())
