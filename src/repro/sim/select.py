"""Which simulator profile stands in for a GPU recipe (`repro run R --sim`).

A profile is named `<model>-<layout>-<gpu>` (kimi26-ep4-rtx6000), a recipe `<model>-<layout>
[-<variant>...]` (kimi26-ep4-dflash, kimi26-tp8-dflash-b200). The profile chosen shares the
recipe's model and layout; among several, the one naming the recipe's GPU (its name or its
`topology.gpu_models`) wins.
"""

from __future__ import annotations

from repro.sim.profile import PROFILE_DIR, ProfileError


def profile_names() -> list[str]:
    return sorted(p.stem for p in PROFILE_DIR.glob("*.json"))


def _gpu_token(model: str) -> str:
    """`RTX PRO 6000` -> `rtx6000`, `B200` -> `b200`: the GPU as profile names spell it."""
    return "".join(w for w in model.lower().split() if w not in ("pro", "blackwell", "nvidia"))


def choose_profile(recipe_name: str, gpu_models: list[str], names: list[str] | None = None) -> str:
    """The profile for a recipe; a ProfileError naming the known ones when none matches."""
    known = profile_names() if names is None else names
    tokens = recipe_name.lower().split("-")
    gpus = {*tokens, *(_gpu_token(m) for m in gpu_models)}
    scored: list[tuple[int, str]] = []
    for name in known:
        parts = name.split("-")
        if len(parts) < 2 or parts[:2] != tokens[:2]:  # model and layout must both agree
            continue
        scored.append((sum(p in gpus for p in parts[2:]), name))
    if not scored:
        raise ProfileError(
            f"no simulator profile matches recipe {recipe_name} (known: {', '.join(known)}); "
            "name one: `repro run RECIPE --sim PROFILE`"
        )
    return max(scored)[1]
