"""`repro campaign run` for real: Compose, the simulator image, bench and accept, per point."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from repro.campaign.folder import CampaignFolder
from repro.runfolder import RunFolder
from tests.support.browser import chromium, layout
from tests.support.cli import REPRO, isolated_env, repro
from tests.support.deployments import deployment_containers

from .demo import BROKEN, demo_campaign, index_of, only_folder

pytestmark = pytest.mark.docker


def test_a_failing_point_is_recorded_and_the_campaign_goes_on_to_a_decision(
    repo_root: Path, tmp_path: Path
) -> None:
    env = isolated_env(tmp_path)
    campaigns = tmp_path / "campaigns"
    result = repro(
        "campaign",
        "run",
        str(demo_campaign(tmp_path, repo_root, BROKEN)),
        "--campaigns-dir",
        str(campaigns),
        cwd=repo_root,
        env=env,
    )
    assert result.returncode == 1, result.stderr[-3000:]
    assert "1 point(s) failed: demo.cap-broken" in result.stderr
    folder = only_folder(campaigns)
    index = index_of(folder)
    assert index["demo.cap-small"]["status"] == "done"
    assert index["demo.cap-big"]["status"] == "done"
    assert index["demo.cap-broken"]["status"] == "failed"
    assert "launch" in str(index["demo.cap-broken"]["reason"])
    for name in index:  # every point's server is gone, the failed one's too
        assert deployment_containers(name, tmp_path / "state") == []
    small = folder / str(index["demo.cap-small"]["run_dir"])
    summary = json.loads(RunFolder(small).bench.summary_file.read_text())
    assert [lv["max_concurrency"] for lv in summary["levels"]] == [1, 4]
    assert RunFolder(small).accept.has_run()  # the demo has a drafter: acceptance was measured

    report = repro("campaign", "report", str(folder), "--json", cwd=repo_root, env=env)
    assert report.returncode == 0, report.stderr[-2000:]
    decision = json.loads(report.stdout)["decision"]
    assert set(decision["table"]) == {"demo.cap-small", "demo.cap-big", "demo.cap-broken"}
    assert decision["table"]["demo.cap-broken"] == {}
    assert decision["slo_winners"][0]["point"] in ("demo.cap-small", "demo.cap-big")
    _page_reads_at_800_px(CampaignFolder(folder).report_dir / "campaign.html", tmp_path)
    assert decision["clock"] == "1 (simulated)" and decision["unranked"] == []
    # what the plan predicted beside what ran, level by level
    against = repro(
        "campaign", "report", str(folder), "--against-plan", "--no-html", cwd=repo_root, env=env
    )
    assert against.returncode == 0, against.stderr[-2000:]
    assert [line for line in against.stdout.splitlines() if len(line) > 80] == []
    assert "demo.cap-small:\n  c=1 " in against.stdout
    sides = json.loads(
        repro("campaign", "report", str(folder), "--against-plan", "--json", "--no-html",
              cwd=repo_root, env=env).stdout
    )["against_plan"]  # fmt: skip
    capped = [s for s in sides if s["point"] == "demo.cap-small"]
    assert [s["concurrency"] for s in capped] == [1, 4] and all(s["predicted"] for s in capped)
    # a level this loaded host invalidated is measured as nothing, and has no error
    assert any(s["measured"] and s["error"] is not None for s in capped)
    assert all((s["measured"] is None) == (s["error"] is None) for s in capped)
    broken = [s for s in sides if s["point"] == "demo.cap-broken"]
    assert broken and all(s["measured"] is None and s["error"] is None for s in broken)
    # a new plan of the same campaign shows what was measured instead of predicting it
    replanned = repro(
        "campaign", "plan", str(tmp_path / "demo-caps.yaml"), "--measured", str(folder),
        cwd=repo_root, env=env,
    )  # fmt: skip
    assert replanned.returncode == 0, replanned.stderr[-2000:]
    assert "demo.cap-small: simulated (demo)" in replanned.stdout
    assert "demo.cap-broken: predicted (demo)" in replanned.stdout
    # an ordinary run folder: `repro report` reads a point as any run
    single = repro("report", str(small), cwd=repo_root, env=env)
    assert single.returncode == 0, single.stderr[-2000:]


def test_kill_9_then_resume_redoes_nothing_finished(repo_root: Path, tmp_path: Path) -> None:
    env = isolated_env(tmp_path)
    process = _campaign_process(repo_root, tmp_path, env, subprocess.DEVNULL)
    try:
        folder = _until_first_point_is("done", process, tmp_path / "campaigns", minutes=10)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    first, second = index_of(folder).values()
    first_summary = folder / RunFolder(str(first["run_dir"])).bench.summary_file
    before = first_summary.stat().st_mtime_ns
    # A kill while a run saves its context leaves a folder holding only the temp file (seen
    # on a loaded machine): no run to resume there, the point is done afresh.
    killed_early = folder / "points" / str(second["name"]) / f"29991231T235959Z-{second['name']}"
    killed_early.mkdir(parents=True)
    (killed_early / ".context.json.k9x2.tmp").write_text('{"ref": ')

    result = repro("campaign", "run", "--resume", str(folder), cwd=repo_root, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    index = index_of(folder)
    assert [p["status"] for p in index.values()] == ["done", "done"]
    assert first_summary.stat().st_mtime_ns == before  # the finished point was not redone
    assert f"point 1/2: {first['name']}" not in result.stderr
    for name, point in index.items():
        assert RunFolder(folder / str(point["run_dir"])).is_pipeline()
        assert deployment_containers(name, tmp_path / "state") == []


def test_an_interrupted_campaign_says_how_to_resume_it_and_a_failure_shows_every_problem(
    repo_root: Path, tmp_path: Path
) -> None:
    env = isolated_env(tmp_path)
    process = _campaign_process(repo_root, tmp_path, env, subprocess.PIPE)
    try:
        folder = _until_first_point_is("running", process, tmp_path / "campaigns", minutes=5)
        process.send_signal(signal.SIGTERM)  # a `kill`, or a scheduler's time limit
        _, stderr = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
    assert process.returncode == 128 + signal.SIGTERM, stderr[-3000:]
    assert "interrupted by SIGTERM" in stderr
    assert f"`repro campaign run --resume {folder}`" in stderr.replace("\n", "")
    assert "repro run --resume" not in stderr  # not the point's: that finishes one point only

    # the second point now fails at its lock on two problems (its recipe edited by hand)
    recipe = folder / "recipes" / "demo.cap-big.yaml"
    recipe.write_text(
        recipe.read_text().replace("extra_args: []", "extra_args: [--no-such-flag, --nor-this-one]")
    )
    problems = ("unknown SGLang option '--no-such-flag'", "unknown SGLang option '--nor-this-one'")
    result = repro("campaign", "run", "--resume", str(folder), cwd=repo_root, env=env)
    assert result.returncode == 1, result.stderr[-3000:]
    index = index_of(folder)
    assert index["demo.cap-small"]["status"] == "done"
    assert index["demo.cap-big"]["status"] == "failed"
    reason = str(index["demo.cap-big"]["reason"])
    assert reason.startswith("stage lock failed: 2 problems:")
    for problem in problems:  # in index.json, the console, the text and HTML reports
        assert problem in reason
        assert problem in " ".join(result.stderr.split())
    report = repro("campaign", "report", str(folder), cwd=repo_root, env=env)
    assert report.returncode == 0, report.stderr[-2000:]
    assert all(len(line) <= 80 for line in report.stdout.splitlines())
    html = _page_reads_at_800_px(CampaignFolder(folder).report_dir / "campaign.html", tmp_path)
    for problem in problems:
        assert problem in " ".join(report.stdout.split())
        assert problem.replace("'", "&#39;") in html


def _campaign_process(
    repo_root: Path, tmp_path: Path, env: dict[str, str], stderr: int
) -> subprocess.Popen[str]:
    """`repro campaign run` of the demo campaign into tmp_path/campaigns, in its own session."""
    command = [REPRO, "campaign", "run", str(demo_campaign(tmp_path, repo_root))]
    return subprocess.Popen(
        [*command, "--campaigns-dir", str(tmp_path / "campaigns")],
        cwd=repo_root,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
        text=True,
        start_new_session=True,
    )


def _until_first_point_is(
    status: str, process: subprocess.Popen[str], campaigns: Path, minutes: int
) -> Path:
    """The campaign folder, once its index says the first point is `status`."""
    deadline = time.monotonic() + minutes * 60
    while time.monotonic() < deadline:
        if campaigns.is_dir() and any(campaigns.iterdir()):
            folder = only_folder(campaigns)
            index = folder / "index.json"
            if index.is_file() and next(iter(index_of(folder).values()))["status"] == status:
                return folder
        assert process.poll() is None, f"the campaign ended before its first point was {status}"
        time.sleep(0.2)
    pytest.fail(f"the first point was not {status} in {minutes} minutes")


def _page_reads_at_800_px(page: Path, tmp_path: Path) -> str:
    """The decision page in headless Chromium at 800 px: its sections, what it is (SIMULATED,
    the time scale), no horizontal scroll, no name broken mid-word, every plot loaded (a
    screenshot is kept beside the test's files). Returns the page's HTML."""
    html = page.read_text()
    for section in ("Output tok/s by concurrency", "Winners under the SLOs", "Pareto frontier"):
        assert section in html
    assert "SIMULATED: every measured point" in html and "demo-caps" in html and "this-box" in html
    assert "<th>time scale</th><td>1 " in html and "word-break: break-all" not in html
    assert "p90_ttft_ms &lt;= 60000" in html  # the SLO's bounds
    shot = tmp_path / "campaign.png"
    subprocess.run([*chromium(tmp_path / "profile", 800), "--virtual-time-budget=5000",
                    f"--screenshot={shot}", page.as_uri()], timeout=90, check=True,
                   capture_output=True)  # fmt: skip
    assert shot.stat().st_size > 10_000
    laid_out = layout(page, tmp_path / "profile", 800)
    assert laid_out.width <= 800
    assert laid_out.broken == []
    assert laid_out.images == len(list(page.parent.glob("*.png"))) >= 1
    return html


def test_gpu_recipes_run_on_the_simulator_from_a_folder_outside_the_project(
    repo_root: Path, tmp_path: Path
) -> None:
    env = isolated_env(tmp_path)
    campaign = tmp_path / "layouts.yaml"
    campaign.write_text(
        "machine: rtx-pro-6000x8\n"
        "points: [{recipe: kimi26-tp8}, {recipe: kimi26-ep4}]\n"
        "bench: {concurrencies: [1, 4], input_len: 64, output_len: 8, dataset: chat,\n"
        "        prompts_per_level: 4, warmup: 1}\n"
    )
    campaigns = tmp_path / "elsewhere"
    result = repro(
        "campaign", "run", str(campaign), "--sim", "--time-scale", "0.05",
        "--campaigns-dir", str(campaigns), cwd=repo_root, env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    folder = only_folder(campaigns)
    for name, point in index_of(folder).items():
        assert point["status"] == "done"
        info = json.loads(
            RunFolder(folder / str(point["run_dir"]) / "bench").server_info_file.read_text()
        )
        assert info["simulated"] is True and info["sim_profile"].startswith(name)
        assert deployment_containers(f"{name}-sim", tmp_path / "state") == []
