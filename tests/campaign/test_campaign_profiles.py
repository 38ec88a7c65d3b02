"""Every shipped campaign plans, and `campaign plan --profile` picks the profile."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repro.sim.profile import load_profile
from tests.support.cli import repro

CAMPAIGNS = sorted(p.name for p in (Path(__file__).parents[2] / "campaigns").glob("*.yaml"))


@pytest.mark.parametrize("name", CAMPAIGNS)
def test_every_shipped_campaign_plans_with_an_estimate(repo_root: Path, name: str) -> None:
    result = repro("campaign", "plan", f"campaigns/{name}", "--json", cwd=repo_root)
    assert result.returncode == 0, result.stderr[-2000:]
    plan = json.loads(result.stdout)
    assert plan["unestimated"] == [] and plan["estimate_s"] > 0
    measured = [p for p in plan["points"] if p["same_server_as"] is None]
    assert all(p["profile"] and p["predicted"] for p in measured), name


def test_the_b300_nvfp4_profile_labels_every_number_by_its_source() -> None:
    profile = load_profile("kimi26-nvfp4-tp8-b300")
    assert profile.deployment["model_repo"] == "nvidia/Kimi-K2.6-NVFP4"
    assert profile.provenance.startswith("extrapolated: from kimi26-tp8-b300")
    assert not profile.measured  # nothing measured: every number is in `assumed`
    assumed = " ".join(profile.assumed)
    for number in ("5.4 ms", "0.02 ms per prompt token", "4.8M KV tokens", "EAGLE3"):
        assert number in assumed
    assert "B300 datasheet" in profile.assumptions and "173 tok/s" in profile.assumptions


def test_plan_profile_names_a_profile_or_a_file_and_refuses_a_typo(
    repo_root: Path, tmp_path: Path
) -> None:
    campaign = tmp_path / "c.yaml"
    campaign.write_text(
        "name: one\nmachine: b300x8\npoints:\n  - recipe: kimi26-tp8-b300\n"
        "bench: {concurrencies: [1], input_len: 64, output_len: 16, dataset: random,"
        " prompts_per_level: 2, warmup: 0}\n"
    )
    copy = tmp_path / "mine.json"
    data = json.loads(Path(load_profile("kimi26-tp8-b300").path).read_text())
    copy.write_text(json.dumps({**data, "name": "mine"}))
    for chosen, shown in (("kimi26-tp8-b300", "kimi26-tp8-b300"), (str(copy), "mine")):
        result = repro("campaign", "plan", str(campaign), "--profile", chosen, cwd=repo_root)
        assert result.returncode == 0, result.stderr[-2000:]
        assert f"predicted ({shown})" in " ".join(result.stdout.split())
    result = repro("campaign", "plan", str(campaign), "--profile", "nope", cwd=repo_root)
    assert result.returncode == 1
    assert "--profile nope: unknown simulator profile 'nope'" in result.stderr
