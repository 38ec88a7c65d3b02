"""The named benchmark sets (z-lab's DFlash protocol) from the local Hub server, and
`repro accept` on them against the simulator: both conventions, intervals, pinned commits."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from hubserver import HubServer
from hubserver.benchsets import GSM8K, HUMANEVAL, MBPP, MT_BENCH, add_benchmark_datasets
from repro.bench.prompts.benchsets import BENCH_SETS, MATH_SUFFIX
from repro.bench.prompts.sets import load_prompt_set
from repro.runfolder import RunFolder
from tests.bench.hubcli import hub_cli
from tests.support.simulator import Sim


@pytest.fixture(scope="module")
def hub() -> Iterator[HubServer]:
    with HubServer() as server:
        add_benchmark_datasets(server)
        yield server


def test_sets_are_formatted_as_z_labs_script_does(hub: HubServer, tmp_path: Path) -> None:
    sets = {
        name: load_prompt_set(name, endpoint=hub.endpoint, cache_dir=tmp_path)
        for name in BENCH_SETS
    }
    assert sets["gsm8k"].prompts == [q + MATH_SUFFIX for q in GSM8K]  # main config, test split
    assert (
        sets["math500"]
        .prompts[0]
        .endswith("\nPlease reason step by step, and put your final answer within \\boxed{}.")
    )
    assert sets["humaneval"].prompts[0] == (
        "Write a solution to the following problem and make sure that it passes the tests:\n"
        f"```python\n{HUMANEVAL[0]}\n```"
    )
    assert sets["mbpp"].prompts == MBPP  # sanitized config, test split, as it is
    assert sets["mt-bench"].prompts == [turns[0] for turns in MT_BENCH]  # the first turn
    for name, ps in sets.items():
        repo = BENCH_SETS[name].ref.removeprefix("hf:").split(":")[0]
        assert ps.source.commit == hub.datasets[ps.source.repo].refs["main"], repo
        assert ps.source.protocol == "z-lab dflash/benchmark.py"


def test_accept_on_the_benchmark_sets(
    sim_spec: Sim, sim_plain: Sim, hub: HubServer, tmp_path: Path
) -> None:
    res = hub_cli(tmp_path, hub, "accept", "demo", "--url", sim_spec.url, "--prompt-sets",
              "gsm8k,math500,humaneval,mbpp,mt-bench", "-n", "4", "--max-new-tokens", "24",
              "--thinking", "--baseline", sim_plain.url, "--json")  # fmt: skip
    assert res.returncode == 0, res.stderr
    (doc,) = json.loads(res.stdout[res.stdout.index("[") :])
    assert [s["prompt_set"] for s in doc["sets"]] == list(BENCH_SETS)
    assert doc["protocol"]["thinking"] is True and doc["protocol"]["concurrency"] == 1
    assert doc["protocol"]["sampling"] == {"temperature": 0.0, "top_p": 1.0, "top_k": 1}
    assert doc["simulated_profile"]["name"] == "demo"
    for s in doc["sets"]:
        per_request = s["accept_length_per_prompt"]
        assert s["prompts"] == 4 and len(per_request) == 4
        assert s["accept_length_mean_per_request"] == pytest.approx(sum(per_request) / 4)
        assert s["accept_length"] == pytest.approx(s["completion_tokens"] / s["spec_verify_ct"])
        for key in ("accept_length_ci95", "accept_length_mean_per_request_ci95"):
            assert s[key]["low"] <= s[key]["high"]
        assert sum(s["accept_histogram"]) == s["spec_verify_ct"]
        assert s["speedup"] > 1.0  # the simulated drafter does save steps
        assert s["source"]["commit"] == hub.datasets[s["source"]["repo"]].refs["main"]
    assert "per-request mean" in res.stderr and "gsm8k" in res.stderr
    run = json.loads((tmp_path / RunFolder(doc["run_dir"]).run_file).read_text())
    assert run["workload"]["protocol"]["thinking"] is True
