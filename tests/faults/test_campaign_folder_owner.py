"""A campaign folder has one owner and no way out: a second `repro campaign run --resume` of
it is refused while the first runs (naming its pid), and a link inside it or a path in its
plan that leads out is refused before anything is read, run or written through it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from repro.campaign.execute import start_campaign
from repro.cli import main
from tests.campaign.demo import demo_campaign

HOLD = """
import sys, time
from pathlib import Path
from repro.campaign.folder import CampaignFolder
with CampaignFolder(Path(sys.argv[1])).claim():
    print("held", flush=True)
    time.sleep(60)
"""


@pytest.fixture
def folder(tmp_path: Path, repo_root: Path) -> Path:
    """A campaign folder of two pending points, as `repro campaign run` starts one."""
    source = demo_campaign(tmp_path, repo_root)
    made, _plan, _index = start_campaign(source, tmp_path / "campaigns", Console(quiet=True))
    return made.path


def _resume_refused(folder: Path) -> str:
    index = (folder / "index.json").read_bytes()
    result = CliRunner().invoke(main, ["campaign", "run", "--resume", str(folder)])
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit), result.exception
    assert (folder / "index.json").read_bytes() == index  # nothing marked, nothing run
    assert not (folder / "points").exists() or not any((folder / "points").rglob("run.json"))
    return result.output.strip().splitlines()[0]


def test_a_second_run_of_one_folder_is_refused(folder: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(folder)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        error = _resume_refused(folder)
        assert f"is run by another repro process (pid {holder.pid})" in error, error
    finally:
        holder.kill()
        holder.wait(timeout=10)


def test_a_link_inside_the_folder_is_not_followed(folder: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    [point] = json.loads((folder / "plan.json").read_text())["points"][:1]
    (folder / "points").mkdir()
    (folder / "points" / point["name"]).symlink_to(elsewhere)
    error = _resume_refused(folder)
    assert f"points/{point['name']}: a link inside a campaign folder" in error, error
    assert not any(elsewhere.iterdir())


def test_a_plan_path_out_of_the_folder_is_refused(folder: Path, tmp_path: Path) -> None:
    plan = json.loads((folder / "plan.json").read_text())
    plan["points"][0]["recipe"] = "../../../demo-caps.yaml"
    (folder / "plan.json").write_text(json.dumps(plan))
    error = _resume_refused(folder)
    assert "'../../../demo-caps.yaml' leads outside the campaign folder" in error, error
