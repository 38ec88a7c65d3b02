"""Which simulator profile stands in for a GPU recipe (`repro run R --sim`).

The profile chosen states the recipe's own deployment: the same model repository
(`deployment.model_repo`), the same layout (tp, pp and ep sizes) and the recipe's GPU model.
There is no fallback to another layout or machine: when none matches, the error names the
profiles of that model and what differs, and `repro run R --sim PROFILE` runs on one anyway
(the profile's machine is then in every label, `sim <profile>, time-scale X`).
"""

from __future__ import annotations

from repro.sim.profile import Profile, ProfileError, list_profiles


def gpu_token(model: str) -> str:
    """`RTX PRO 6000 Blackwell` -> `rtx6000`, `B200` -> `b200`: a GPU as profile names spell it."""
    return "".join(w for w in model.lower().split() if w not in ("pro", "blackwell", "nvidia"))


def layout(profile: Profile) -> tuple[int, int, int]:
    """(tp, pp, ep) of the deployment a profile states."""
    d = profile.deployment
    return (int(d.get("tp_size", 1)), int(d.get("pp_size", 1)), int(d.get("ep_size", 1)))


def layout_text(sizes: tuple[int, int, int]) -> str:
    return (
        " ".join(f"{k}{v}" for k, v in zip(("tp", "pp", "ep"), sizes, strict=True) if v > 1)
        or "tp1"
    )


def choose_profile(
    recipe_name: str,
    model_repo: str,
    sizes: tuple[int, int, int],
    gpu_models: list[str],
    profiles: list[Profile] | None = None,
) -> str:
    """The profile of the recipe's model, layout and GPU; a ProfileError saying what differs."""
    known = list_profiles() if profiles is None else profiles
    same_model = [p for p in known if p.deployment.get("model_repo") == model_repo]
    same_layout = [p for p in same_model if layout(p) == sizes]
    gpus = {gpu_token(m) for m in gpu_models}
    matches = [
        p for p in same_layout if not gpus or gpu_token(str(p.deployment.get("gpu", ""))) in gpus
    ]
    if len(matches) == 1 or (matches and gpus):
        return sorted(p.name for p in matches)[0]
    wanted = f"{model_repo}, {layout_text(sizes)}, GPU {' or '.join(gpu_models) or '(none named)'}"
    if not same_model:
        why = f"no profile is of model {model_repo}"
    elif not same_layout:
        why = f"none of {model_repo} is {layout_text(sizes)}"
    else:
        why = f"none of that layout is on {' or '.join(gpu_models) or 'one named GPU'}"
    others = ", ".join(
        f"{p.name} ({layout_text(layout(p))}, {p.deployment.get('gpu', '?')})" for p in same_model
    )
    raise ProfileError(
        f"no simulator profile for recipe {recipe_name} ({wanted}): {why}"
        + (f"; profiles of the model: {others}" if others else "")
        + "; run on one anyway with `repro run RECIPE --sim PROFILE`"
    )
