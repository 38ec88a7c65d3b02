"""Whether a run's acceptance is forced (SGLANG_SIMULATE_ACC_LEN), and how: read from the
recipe (`speculative.forced_acceptance`), from what the user declares for a server given by
URL (`--forced-acceptance`), or from a simulator's /server_info; SGLang itself does not report
its environment, so a real server's forcing is known only from the first two."""

from __future__ import annotations

from repro.errors import ReproError
from repro.schema.forced import ForcedAcceptance
from repro.schema.recipe import Recipe
from repro.schema.serverinfo import ServerInfo

NOT_FORCED = "not forced"


def run_forced_acceptance(
    recipe: Recipe | None, declared: ForcedAcceptance | None, info: ServerInfo
) -> ForcedAcceptance | None:
    """The forced acceptance to record for a run (None: the drafter's own); a user error when
    the recipe, the declaration and a simulator (which says "not forced" too) disagree."""
    spec = recipe.speculative if recipe is not None else None
    sources: list[tuple[str, ForcedAcceptance | None]] = [
        (where, value)
        for where, value in (
            (
                "the recipe's speculative.forced_acceptance",
                spec.forced_acceptance if spec else None,
            ),
            ("--forced-acceptance", declared),
        )
        if value is not None
    ]
    if info.reported("sim_forced_acceptance"):
        sources.append(("the simulator's /server_info", info.sim_forced_acceptance))
    if len({value.label() if value else NOT_FORCED for _, value in sources}) > 1:
        said = "; ".join(
            f"{where}: {value.label() if value else NOT_FORCED}" for where, value in sources
        )
        raise ReproError(
            f"the forced acceptance disagrees between sources ({said})",
            hint="give --forced-acceptance as the server was launched, or leave it out",
        )
    return next((value for _, value in sources if value is not None), None)
