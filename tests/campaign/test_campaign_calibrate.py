"""`repro campaign calibrate`: a short sweep on "the machine in hand" (the simulator, with
another profile standing in for a new machine), a profile fitted to it, the campaign planned
again on that profile."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from repro.sim.profile import load_profile
from tests.support.cli import isolated_env, repro

pytestmark = pytest.mark.docker

CAMPAIGN = """
name: qwen-tp1
machine: rtx-pro-6000x1
points:
  - {recipe: qwen36-27b-tp1-dflash, name: plain,
     set: {drafter: null, speculative: null, accept: null}}
  - {recipe: qwen36-27b-tp1-dflash, name: dflash, set: {accept: null}}
bench: {concurrencies: [1, 4, 16], input_len: 256, output_len: 64, dataset: random,
        prompts_per_level: 16, warmup: 1}
"""
NEW_MACHINE = "qwen36-27b-tp4-rtx6000"  # stands in for the machine the campaign moves to
OLD_MACHINE = "qwen36-27b-tp1-rtx6000"  # what the campaign's points are predicted on


def test_a_short_sweep_on_a_new_machine_replans_the_campaign_on_its_numbers(
    repo_root: Path, tmp_path: Path
) -> None:
    env = isolated_env(tmp_path)
    campaign = tmp_path / "qwen.yaml"
    campaign.write_text(CAMPAIGN)
    result = repro(
        "campaign", "calibrate", str(campaign), "--sim", NEW_MACHINE, "--time-scale", "0.2",
        "--concurrencies", "1,4", "--forced", "1,4", "--campaigns-dir", str(tmp_path / "runs"),
        "--json", cwd=repo_root, env=env, timeout=900,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert _containers_under(tmp_path) == []  # every sweep server stopped and removed
    data = json.loads(result.stdout)
    profile = load_profile(data["profile"])
    # labelled with its records: 3 servers (plain, forced 1, forced 4) at c=1 and 4
    assert profile.provenance.startswith("calibrated: fitted on ")
    assert "levels of 3 bench records in " in profile.provenance
    assert f"acceptance and drafters from {OLD_MACHINE}" in profile.provenance
    # the new machine's step cost, not the old one's; the drafter's acceptance kept
    new, old = load_profile(NEW_MACHINE), load_profile(OLD_MACHINE)
    fixed = profile.timing.decode_fixed_ms
    assert abs(fixed / new.timing.decode_fixed_ms - 1) < 0.25, fixed
    assert profile.spec("DFLASH").accept_length == old.spec("DFLASH").accept_length
    # every point planned on it, within the fit's held-out band
    points = {p["name"]: p for p in data["plan"]["points"]}
    assert {p["profile"] for p in points.values()} == {profile.name}
    plain = points["plain"]["predicted"][0]
    assert plain["max_concurrency"] == 1
    single = 1000.0 / (new.timing.decode_fixed_ms + new.timing.decode_per_req_ms)
    assert abs(plain["output_throughput"] / single - 1) < 0.25  # the new machine's decode
    band = data["band"]
    assert 0 <= band["median"] <= band["worst"]
    # on random prompts the drafter barely accepts: where plain and DFLASH are within the
    # band of each other, the plan says only measuring decides
    for close in data["measure_to_decide"]:
        assert set(close["points"]) == {"plain", "dflash"}


def _containers_under(root: Path) -> list[str]:
    """Containers (running or not) of repro deployments whose Compose files lie under root."""
    listed = subprocess.run(
        ["docker", "ps", "-a", "--filter", "label=dev.repro.deployment", "--format",
         '{{.Names}}\t{{.Label "com.docker.compose.project.config_files"}}'],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    return [
        line.split("\t")[0] for line in listed.splitlines() if str(root) in line.partition("\t")[2]
    ]
