"""Which server answers: its `/server_info` against the recipe or lock, before any request is
measured, so a benchmark never records one deployment's numbers under another's name.

Compared (ServerInfo's fields: SGLang's server argument names, which `/server_info` returns):
`model_path` and `revision`, `speculative_algorithm`, `speculative_draft_model_path` and
`speculative_draft_model_revision`, `speculative_num_draft_tokens` (DFLASH, where SGLang takes
the value as given or the drafter's block_size), `tp_size`, `pp_size`, `ep_size` (when the
recipe sets it: SGLang sets it to tp_size itself for DeepEP), and the image the container runs
when repro launched it there (`running_image`) against the lock's. A revision is the one the
recipe names or the commit its lock pins; SGLang's `None` is the Hub's default branch
(`main`). A key the server does not report is not compared (older servers). A mismatch is
one line naming what the recipe wants and what the server runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from repro.errors import ReproError
from repro.schema.lock import Lock
from repro.schema.recipe import Recipe
from repro.schema.record import ServerIdentity
from repro.schema.serverinfo import RunningImage, ServerInfo

# SGLang rewrites NEXTN to EAGLE in ServerArgs (srt/server_args.py, _handle_speculative_decoding)
_ALGORITHM_ALIASES = {"NEXTN": "EAGLE"}
_DFLASH_FAMILY = ("DFLASH", "DDTREE")


@dataclass(frozen=True)
class Want:
    """One server argument the recipe fixes: its accepted values, shown as `shown`."""

    key: str
    accepted: tuple[Any, ...]
    shown: str


def _repo_matches(found: Any, repo: str) -> bool:
    """A Hub id as given, or a local path to it (`.../models--org--name/snapshots/<sha>` of a
    Hub cache, or a directory named like the repo)."""
    if not isinstance(found, str):
        return False
    text = found.rstrip("/")
    return (
        text == repo
        or text.endswith("/" + repo)
        or f"/models--{repo.replace('/', '--')}/snapshots/" in text
    )


def _revisions(asked: str, sha: str | None) -> tuple[Any, ...]:
    accepted: tuple[Any, ...] = (asked,) + ((sha,) if sha else ())
    return (*accepted, None) if "main" in accepted else accepted


def _algorithm(value: Any) -> str | None:
    if value in (None, "", "NONE"):
        return None
    name = str(value).upper()
    return _ALGORITHM_ALIASES.get(name, name)


def wanted(recipe: Recipe, lock: Lock | None = None) -> list[Want]:
    """What `recipe` (with its lock, when it came from one) fixes about the server."""
    model_sha = lock.model.sha if lock else None
    out = [
        Want("model_path", (recipe.model.repo,), recipe.model.repo),
        Want(
            "revision",
            _revisions(recipe.model.revision, model_sha),
            " or ".join(dict.fromkeys(filter(None, (recipe.model.revision, model_sha)))),
        ),
    ]
    spec = recipe.speculative
    algorithm = _algorithm(spec.algorithm) if spec else None
    out.append(Want("speculative_algorithm", (algorithm,), str(algorithm)))
    drafter = recipe.drafter
    if drafter is not None:
        drafter_sha = lock.drafter.sha if lock and lock.drafter else None
        out.append(Want("speculative_draft_model_path", (drafter.repo,), drafter.repo))
        out.append(
            Want(
                "speculative_draft_model_revision",
                _revisions(drafter.revision, drafter_sha),
                " or ".join(dict.fromkeys(filter(None, (drafter.revision, drafter_sha)))),
            )
        )
    else:
        out.append(Want("speculative_draft_model_path", (None,), "none"))
    if spec is not None and algorithm == "DFLASH":
        locked_block = lock.drafter_block_size if lock else None
        tokens = spec.num_draft_tokens or spec.block_size or locked_block
        if tokens:
            out.append(Want("speculative_num_draft_tokens", (tokens,), str(tokens)))
    par = recipe.parallelism
    out += [Want("tp_size", (par.tp,), str(par.tp)), Want("pp_size", (par.pp,), str(par.pp))]
    if par.ep > 1:
        out.append(Want("ep_size", (par.ep,), str(par.ep)))
    return out


def _matches(want: Want, found: Any) -> bool:
    if want.key in ("model_path", "speculative_draft_model_path") and want.accepted != (None,):
        return _repo_matches(found, want.accepted[0])
    if want.key == "speculative_algorithm":
        return _algorithm(found) in want.accepted
    return found in want.accepted


def found_identity(info: ServerInfo, image: RunningImage | None = None) -> dict[str, Any]:
    """What the server says it runs, as the record keeps it (`--url` without a recipe)."""
    keys = (
        "model_path", "revision", "speculative_algorithm", "speculative_draft_model_path",
        "speculative_draft_model_revision", "speculative_num_draft_tokens", "tp_size", "ep_size",
        "pp_size",
    )  # fmt: skip
    found = {key: getattr(info, key) for key in keys if info.reported(key)}
    if image is not None:
        found["image_id"] = image.image_id
    return found


def check_identity(
    url: str,
    info: ServerInfo,
    recipe: Recipe,
    lock: Lock | None = None,
    image: RunningImage | None = None,
) -> ServerIdentity:
    """Raise ReproError when the server at `url` is not what `recipe` (and its `lock`)
    deploys; else return what was compared (the record's `server_identity`)."""
    what: Literal["recipe", "lock"] = "lock" if lock else "recipe"
    checked = []
    for want in wanted(recipe, lock):
        if not info.reported(want.key):
            continue
        found = getattr(info, want.key)
        if not _matches(want, found):
            raise ReproError(
                f"the server at {url} is not {recipe.name}: the {what} wants "
                f"{want.key}={want.shown}, the server runs {want.key}={found}",
                hint=f"point at {recipe.name}'s server (--url), or launch it: "
                f"`repro launch {recipe.name}`",
            )
        checked.append(want.key)
    locked_image = lock.image.image_id if lock and lock.image else None
    running = image.image_id if image is not None else None
    if locked_image and running:
        if running != locked_image:
            raise ReproError(
                f"the server at {url} is not {recipe.name}: the lock wants image "
                f"{locked_image}, the container runs {running}",
                hint=f"launch the locked image: `repro launch {recipe.name}`",
            )
        checked.append("image_id")
    return ServerIdentity(checked_against=what, checked=checked, found=found_identity(info, image))


def check_same_server(url: str, info: ServerInfo, recorded: ServerIdentity | None) -> None:
    """A resumed run measures the server it started with: what /server_info reports now
    against the run's recorded `server_identity.found` (older runs recorded none)."""
    before = recorded.found if recorded is not None else {}
    now = found_identity(info)
    for key, value in now.items():
        if key in before and before[key] != value:
            raise ReproError(
                f"the server at {url} is not the one this run measured: it started with "
                f"{key}={before[key]}, the server runs {key}={value}",
                hint="resume against the server the run started with (--url), or start a new run",
            )
