"""Issue 70: errors name what the user wrote. `repro campaign calibrate` writes its options
into a sweep's campaign file in a temporary folder; a value that file refuses (a concurrency
of 100000000000, a repeated level, a forced length below 1) is refused naming the option and
what it accepts, never that temporary file (gone by the time the user reads the error), and
before anything is planned, made or started. A fraction is not rounded into a concurrency."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import main
from tests.campaign.test_campaign_calibrate import CAMPAIGN  # the sweep it calibrates

MANY = ",".join(str(c) for c in range(1, 66))

REFUSED = [
    ("--concurrencies", "100000000000", "each concurrency is between 1 and 100000"),
    ("--concurrencies", "1,1", "concurrency levels must not repeat"),
    ("--concurrencies", MANY, "at most 64 items"),
    ("--concurrencies", "2.5", "expected positive whole numbers"),
    ("--concurrencies", "1e400", "expected positive whole numbers"),
    ("--forced", "0.5", "expected a value >= 1"),
    ("--forced", "2000", "expected a value <= 1024"),
    ("--forced", "inf", "expected positive numbers"),
    ("--forced", "2,2", "each length once"),
]


@pytest.mark.parametrize(
    ("option", "value", "says"), REFUSED, ids=[f"{o}={v[:20]}" for o, v, _ in REFUSED]
)
def test_a_sweep_value_is_refused_naming_the_option(
    tmp_path: Path, repo_root: Path, monkeypatch: pytest.MonkeyPatch, option: str, value: str,
    says: str,
) -> None:  # fmt: skip
    monkeypatch.chdir(repo_root)
    campaign = tmp_path / "qwen.yaml"
    campaign.write_text(CAMPAIGN)
    campaigns = tmp_path / "runs"
    result = CliRunner().invoke(
        main,
        ["campaign", "calibrate", str(campaign), "--sim", "qwen36-27b-tp4-rtx6000",
         "--campaigns-dir", str(campaigns), option, value],
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit), result.exception
    first = result.output.strip().splitlines()[0]
    assert first.startswith(f"error: {option} "), result.output
    assert says in first, result.output
    assert "repro-calibrate-" not in result.output and "calibration.yaml" not in result.output
    assert not campaigns.exists()  # nothing made, nothing started
