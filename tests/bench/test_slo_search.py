"""`repro bench --slo-search`: after the ladder, levels between the highest that meets the
limits and the lowest that fails, each the midpoint (in log concurrency) of the bracket the
levels before it left, at most --search-levels of them."""

from __future__ import annotations

import json
import math
from pathlib import Path

from repro.runfolder import RunFolder
from tests.support.cli import isolated_env, repro
from tests.support.simulator import Simulators

LIMIT_MS = 60.0  # the simulator's p90 TTFT: ~14 ms at c=1, above 100 ms at c=64 (queueing)


def _bracket(ttft: dict[int, float]) -> tuple[int | None, int | None]:
    """The highest level meeting LIMIT_MS with all below it, and the first failing."""
    below = None
    for level in sorted(ttft):
        if ttft[level] > LIMIT_MS:
            return below, level
        below = level
    return below, None


def test_the_search_bisects_the_bracket_the_ladder_leaves(
    simulator: Simulators, tmp_path: Path
) -> None:
    server = simulator.tiny()
    try:
        result = repro(
            "bench", "--url", server.url, "--concurrency", "1,64", "--prompts", "64",
            "--input-len", "64", "--output-len", "16", "--slo-search",
            f"p90_ttft_ms={LIMIT_MS:g}", "--search-levels", "3", "--json",
            "--output", str(tmp_path / "run"), cwd=tmp_path, env=isolated_env(tmp_path),
        )  # fmt: skip
    finally:
        server.stop()
    assert result.returncode == 0, result.stderr
    levels = json.loads(result.stdout)["levels"]
    assert all(lv["valid"] for lv in levels), levels
    ttft = {int(lv["max_concurrency"]): lv["p90_ttft_ms"] for lv in levels}
    extra = set(ttft) - {1, 64}
    assert 1 <= len(extra) <= 3, sorted(ttft)
    seen = {c: ttft[c] for c in (1, 64)}
    for _ in extra:  # each extra level is the log midpoint of the bracket the others left
        low, high = _bracket(seen)
        assert low is not None and high is not None, seen
        chosen = round(math.sqrt(low * high))
        assert chosen in extra, (low, high, sorted(extra))
        seen[chosen] = ttft[chosen]
    low, high = _bracket(seen)
    assert low is not None and high is not None and high / low < 64
    assert f"meets it up to c={low}, fails from c={high}" in result.stderr
    recorded = json.loads(RunFolder(tmp_path / "run").recipe_file.read_text())
    assert recorded["bench"]["slo_search"]["limits"] == {"p90_ttft_ms": LIMIT_MS}


def test_a_bad_search_limit_is_refused_before_any_request(tmp_path: Path) -> None:
    result = repro(
        "bench", "--url", "http://127.0.0.1:9", "--slo-search", "p90_ttft=500",
        cwd=tmp_path, env=isolated_env(tmp_path),
    )  # fmt: skip
    assert result.returncode != 0
    assert "'p90_ttft' is not a latency key" in result.stderr
    assert "Traceback" not in result.stderr
