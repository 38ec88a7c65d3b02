"""The decision a buyer acts on, from real simulated campaigns (Compose, the simulator image):
two machines ranked by $ per million output tokens in a folder of their own, and the lossless
verdict of every drafter point against its baseline point, a diverging point marked wherever
it is named."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from repro.campaign.decision import NOT_LOSSLESS
from tests.support.browser import layout
from tests.support.cli import isolated_env, repro
from tests.support.deployments import deployment_containers

from .demo import index_of, only_folder

pytestmark = pytest.mark.docker

MACHINE = """
machine: {machine}
gpu_hour_usd: {price}
points: [{{recipe: {recipe}}}]
bench: {{concurrencies: [1, 2], input_len: 64, output_len: 8, dataset: chat,
        prompts_per_level: 4, warmup: 1}}
slos:
  relaxed: {{p90_ttft_ms: 600000}}
"""


def _campaign(tmp_path: Path, repo_root: Path, env: dict[str, str], name: str, text: str) -> Path:
    source = tmp_path / f"{name}.yaml"
    source.write_text(text)
    where = tmp_path / name
    result = repro(
        "campaign", "run", str(source), "--sim", "--time-scale", "0.5",
        "--campaigns-dir", str(where), cwd=repo_root, env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return only_folder(where)


def test_two_machines_are_ranked_by_cost_in_their_own_folder(
    repo_root: Path, tmp_path: Path
) -> None:
    env = isolated_env(tmp_path)
    rtx = _campaign(tmp_path, repo_root, env, "rtx", MACHINE.format(
        machine="rtx-pro-6000x8", price=1.6, recipe="kimi26-tp8"))  # fmt: skip
    b200 = _campaign(tmp_path, repo_root, env, "b200", MACHINE.format(
        machine="b200x8", price=5.0, recipe="kimi26-ep4"))  # fmt: skip
    own = repro("campaign", "report", str(rtx), cwd=tmp_path, env=env)
    assert own.returncode == 0, own.stderr[-2000:]
    page = rtx / "report" / "campaign.html"
    before = page.read_bytes()
    plots = {p.name: p.read_bytes() for p in page.parent.glob("*.png")}

    work = tmp_path / "work"
    work.mkdir()
    both = repro("campaign", "report", str(rtx), str(b200), "--json", cwd=work, env=env)
    assert both.returncode == 0, both.stderr[-2000:]
    assert page.read_bytes() == before  # A's own page is as it was, and its plots
    assert {p.name: p.read_bytes() for p in page.parent.glob("*.png")} == plots
    [joined] = (work / "runs" / "campaign-reports").iterdir()  # relative to where it ran
    html = (joined / "campaign.html").read_text()
    assert "rtx-pro-6000x8" in html and "b200x8" in html
    assert "Cost per million output tokens under the SLOs" in html and "$/Mtok" in html
    laid_out = layout(joined / "campaign.html", tmp_path / "profile", 800)
    assert laid_out.width <= 800 and laid_out.broken == []  # the cost table fits 800 px
    assert laid_out.images == len(list(joined.glob("*.png"))) >= 1

    data = json.loads(both.stdout)
    [cost] = data["decision"]["cost"]
    rows = cost["rows"]
    assert [r["machine"] for r in rows] and cost["slo"] == "relaxed"
    priced = [r["usd_per_mtok"] for r in rows]
    assert None not in priced and priced == sorted(priced)  # cheapest first
    points = {p["name"]: p for p in data["points"]}
    for row in rows:  # $ per Mtok = GPUs x $/GPU-hour over output tok/s, its price's source named
        point = points[row["point"]]
        gpus, per_gpu = point["gpus"], row["tok_s_per_gpu"]
        expected = row["gpu_hour_usd"] / 3600 / per_gpu * 1e6
        assert row["usd_per_mtok"] == pytest.approx(expected, rel=1e-6)
        assert gpus == 8 and "gpu_hour_usd" in row["price_source"]
    assert {r["gpu_hour_usd"] for r in rows} == {1.6, 5.0}
    # the terminal says the same, with the source, within 80 columns
    shown = repro("campaign", "report", str(rtx), str(b200), "--out", str(work / "mine"),
                  cwd=work, env=env)  # fmt: skip
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert "SLO relaxed by $ per million output tokens (cheapest first):" in shown.stdout
    first = rows[0]["point"]
    assert f"  {first}: ${rows[0]['usd_per_mtok']:.2f}/Mtok" in shown.stdout
    assert "from campaign" in shown.stdout
    assert (work / "mine" / "campaign.html").is_file()
    assert page.read_bytes() == before


LOSSLESS = """
machine: this-box
points:
  - {{recipe: {demo}}}
  - {{recipe: {demo}, name: plain, set: {{drafter: null, speculative: null, accept: null}}}}
  - {{recipe: {demo}, name: lossy, set: {{env.REPRO_SIM_LOSSY_DRAFTER: "1"}}}}
  - recipe: {demo}
    name: lossy-plain
    set: {{drafter: null, speculative: null, accept: null, env.REPRO_SIM_LOSSY_DRAFTER: "1"}}
bench: {{concurrencies: [1, 4], input_len: 64, output_len: 16, dataset: chat,
        prompts_per_level: 8, warmup: 1}}
accept: {{prompt_sets: [chat], prompts: 2, max_new_tokens: 16}}
slos:
  relaxed: {{p90_ttft_ms: 600000}}
"""


def test_a_simulated_campaign_shows_each_drafter_points_lossless_verdict(
    repo_root: Path, tmp_path: Path
) -> None:
    """The lossy point's baseline carries the same switch (the simulator reads it only with a
    drafter), so both pairs are of one layout each."""
    env = isolated_env(tmp_path)
    text = LOSSLESS.format(demo=repo_root / "recipes" / "demo.yaml")
    source = tmp_path / "lossless.yaml"
    source.write_text(text)
    result = repro("campaign", "run", str(source), "--campaigns-dir", str(tmp_path / "c"),
                   cwd=repo_root, env=env)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    folder = only_folder(tmp_path / "c")
    for name in index_of(folder):  # every kept server was stopped after its probe
        assert deployment_containers(name, tmp_path / "state") == []

    report = repro("campaign", "report", str(folder), "--json", cwd=tmp_path, env=env)
    assert report.returncode == 0, report.stderr[-2000:]
    data = json.loads(report.stdout)
    points = {p["name"]: p for p in data["points"]}
    good, bad = points["demo"]["lossless"], points["lossy"]["lossless"]
    assert good["passed"] is True and good["baseline"] == "plain"
    assert good["verdict"].startswith("lossless: 8/8 identical at c=1")
    assert bad["passed"] is False and bad["baseline"] == "lossy-plain"
    assert "NOT LOSSLESS" in bad["verdict"] and "first: prompt" in bad["verdict"]
    assert points["plain"]["lossless"] is None
    assert data["decision"]["not_lossless"] == ["lossy"]

    terminal = repro("campaign", "report", str(folder), cwd=tmp_path, env=env)
    assert terminal.returncode == 0, terminal.stderr[-2000:]
    out = terminal.stdout
    assert f"lossy {NOT_LOSSLESS} vs lossy-plain: NOT LOSSLESS" in out
    assert "demo vs plain: lossless: 8/8 identical at c=1" in out
    # wherever the lossy point is named, the mark is beside it: never a bare winner (the
    # terminal may wrap between the name and its mark)
    flat = " ".join(out.split())
    named = [m.end() for m in re.finditer(r"(?<![\w/-])lossy(?![\w-])", flat)]
    assert len(named) >= 3, flat  # the table, the lossless line, the crossover at least
    for end in named:
        assert flat[end:].startswith(f" {NOT_LOSSLESS}"), flat[end - 40 : end + 40]
    html = (folder / "report" / "campaign.html").read_text()
    assert "Lossless check" in html
    assert "lossless: 8/8 identical at c=1" in html
    assert f"lossy {NOT_LOSSLESS}" in html and 'class="diverges"' in html
