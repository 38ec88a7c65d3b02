"""What a bench or accept measures: a recipe with its lock, or a bare server URL, and the
recipe.json each records (a `--url` run's stays `{name, url, bench}` for old readers)."""

from __future__ import annotations

import pytest

from repro.bench.target import BenchTarget
from repro.errors import ReproError
from repro.recipe import load_recipe
from repro.schema.lock import Locked


def test_a_url_target_is_named_after_the_server_and_records_only_its_plan() -> None:
    target = BenchTarget.from_url("http://10.0.0.5:30000/")
    assert (target.name, target.url, target.ref) == (
        "10.0.0.5:30000",
        "http://10.0.0.5:30000",
        "http://10.0.0.5:30000/",
    )
    assert target.recipe is None and target.lock is None and not target.declares_simulator
    assert target.gpus == 0 and target.gpu_hour_usd is None
    plan = target.bench.model_copy(update={"concurrencies": [2]})
    recorded = target.recorded(plan)
    assert set(recorded.model_dump(mode="json", exclude_unset=True)) == {"name", "url", "bench"}
    assert recorded.bench is not None and recorded.bench["concurrencies"] == [2]
    assert recorded.gpus == 0
    assert target.server_url(1234) == "http://10.0.0.5:30000"
    with pytest.raises(ReproError, match=r"needs a recipe, not the bare server 10\.0\.0\.5:30000"):
        target.need_recipe("acceptance length")


def test_a_recipe_target_records_the_recipe_with_the_plan_it_ran() -> None:
    demo = load_recipe("demo")
    target = BenchTarget.from_locked(Locked(demo))
    assert target.name == target.ref == "demo" and target.declares_simulator
    assert target.gpus == demo.topology.gpus
    recorded = target.recorded(target.bench.model_copy(update={"prompts_per_level": 3}))
    dumped = recorded.model_dump(mode="json", exclude_unset=True)
    assert set(dumped) == set(demo.model_dump(mode="json"))  # the whole recipe, with the plan
    assert dumped["bench"]["prompts_per_level"] == 3 and recorded.model_ref.startswith(
        demo.model.repo
    )
    assert demo.bench.prompts_per_level != 3  # the recipe's own plan is untouched
    # the deployment repro launched for it, else the recipe's own port
    assert target.server_url(4321) == "http://127.0.0.1:4321"
    assert target.server_url() == f"http://127.0.0.1:{demo.server.port}"
