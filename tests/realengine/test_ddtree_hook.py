"""The DDTree image's hand-copied `provides.constraints` held against the pull request's own
`_handle_ddtree`, run on SGLang 0.5.15's start-up code with the pinned DDTree diff applied:
each constraint is refused or forced by the hook as the image spec declares it. Needs the diff
in the patch cache (scripts/ddtree-patch builds it from the PR's public files); skipped
without it, as CI is."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from repro.lock import patchcache
from repro.realengine.patched_release import apply_patch_set
from repro.recipe.images import load_image_spec
from repro.schema.image import ImageSpec, OptionConstraint
from repro.settings import SGLANG_PYTHON
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.real_sglang

IMAGE = "sglang-0.5.15-cu13-ddtree"
RELEASE = "0.5.15"
BLOCK = 4  # the tiny drafter's block size: a budget above BLOCK - 1 builds a tree
# Where the hook leaves a value it forces, when that is not the option's own field.
FORCED_INTO = {"--cuda-graph-backend-prefill": "cuda_graph_config.prefill.backend"}
# Runs in the engine's Python: each argv through prepare_server_args, one JSON line each.
PROBE = """
import json, sys, traceback
from sglang.srt.server_args import prepare_server_args
for line in sys.stdin:
    argv, fields = json.loads(line)
    try:
        args = prepare_server_args(argv)
    except BaseException as err:
        frame = traceback.extract_tb(err.__traceback__)[-1]
        print(json.dumps({"refused": str(err), "by": frame.name}), flush=True)
        continue
    resolved = {}
    for field in fields:
        value = args
        for part in field.split("."):
            value = getattr(value, part)
        resolved[field] = value if isinstance(value, (bool, int, type(None))) else str(value)
    print(json.dumps({"resolved": resolved}), flush=True)
"""


def _spec() -> ImageSpec:
    return load_image_spec(REPO_ROOT / "images" / f"{IMAGE}.yaml")


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], Path]:
    """The engine's Python, its environment with the patched 0.5.15 first on the path, and a
    tiny model with a DFlash drafter of block size BLOCK."""
    spec = _spec()
    assert spec.patch_set is not None
    remote = spec.patch_set.remote[0]
    if patchcache.read_cached(remote, remote.sha256) is None:
        pytest.skip(patchcache.missing_line(IMAGE, remote, remote.sha256))
    python = Path(SGLANG_PYTHON.text())
    overlay = python.parent.parent / "releases" / RELEASE
    if not (overlay / "sglang").is_dir():
        pytest.skip(f"SGLang {RELEASE}'s start-up code is not installed (make sglang-engine)")
    applied = apply_patch_set(spec, REPO_ROOT / "patches", RELEASE, overlay / "sglang", python)
    assert applied.folder is not None, applied.line
    models = tmp_path_factory.mktemp("tiny")
    subprocess.run(
        [str(python), str(REPO_ROOT / "src/repro/realengine/tinymodel.py"), str(models / "t"),
         "--drafter", str(models / "d"), "--block-size", str(BLOCK)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGLANG_")}
    env.update(PYTHONPATH=f"{applied.folder}{os.pathsep}{overlay}", HF_HUB_OFFLINE="1")
    return python, env, models


def _start(
    engine: tuple[Path, dict[str, str], Path], runs: list[tuple[list[str], list[str]]]
) -> list[dict[str, object]]:
    """Each (extra argv, fields to read) through the patched start-up code of a DDTREE server."""
    python, env, models = engine
    base = ["--model-path", str(models / "t"), "--speculative-draft-model-path",
            str(models / "d"), "--speculative-algorithm", "DDTREE", "--device", "cpu"]  # fmt: skip
    lines = "".join(json.dumps([base + argv, fields]) + "\n" for argv, fields in runs)
    done = subprocess.run(
        [str(python), "-c", PROBE], input=lines, env=env, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    answers = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert len(answers) == len(runs), done.stderr[-2000:]
    return answers


def _scenarios(constraint: OptionConstraint) -> list[tuple[str, list[str], list[str]]]:
    """(what must happen, extra argv, fields): the constraint as the hook must show it."""
    option, value = constraint.option, constraint.value
    tree = constraint.when == "full_tree"
    budget = ["--speculative-ddtree-budget", str(BLOCK + 4 if tree else BLOCK - 1)]
    fallback = [constraint.fallback, str(value)] if constraint.fallback else []
    page = [] if option == "--page-size" else ["--page-size", "1"]
    backends = ["--attention-backend", "triton"] if tree and not fallback else []
    base = page + backends + fallback
    if constraint.effect == "minimum":
        assert isinstance(value, int)
        return [
            ("refused", [*base, option, str(value - 1)], []),
            ("started", [*base, option, str(value)], []),
        ]
    if constraint.effect == "refuses":
        return [("refused", base + budget + [option], []), ("started", base + budget, [])]
    if constraint.effect == "requires":
        other = "torch_native" if isinstance(value, str) else str(int(value or 1) * 16)
        runs: list[tuple[str, list[str], list[str]]] = [
            ("refused", base + budget + [option, other], []),
            ("started", base + budget + [option, str(value)], []),
        ]
        if constraint.explicit:
            without = [t for t in base if t not in fallback] if fallback else base
            runs.append(("refused", without + budget, []))
        return runs
    assert constraint.effect == "forces", constraint.effect
    field = FORCED_INTO.get(option, option.lstrip("-").replace("-", "_"))
    asked = [option, constraint.replaces] if constraint.replaces else []
    return [(f"{field}={value}", base + budget + asked, [field])]


def test_each_declared_constraint_is_what_the_prs_hook_does(
    engine: tuple[Path, dict[str, str], Path],
) -> None:
    provides = _spec().provides
    cases = [
        (c, want, argv, fields)
        for c in provides.constraints
        if c.algorithm == "DDTREE"
        for want, argv, fields in _scenarios(c)
    ]
    assert len({c.option for c, *_ in cases}) == len(provides.constraints)
    answers = _start(engine, [(argv, fields) for _c, _want, argv, fields in cases])
    wrong = []
    for (constraint, want, argv, _fields), got in zip(cases, answers, strict=True):
        dest = constraint.option.lstrip("-").replace("-", "_")
        if want == "refused":
            said = str(got.get("refused", ""))
            ok = got.get("by") == "_handle_ddtree" and (constraint.option in said or dest in said)
        elif want == "started":
            ok = "resolved" in got
        else:
            field, value = want.split("=", 1)
            resolved = got.get("resolved")
            ok = isinstance(resolved, dict) and str(resolved.get(field)) == value
        if not ok:
            wrong.append(f"{constraint.option} ({constraint.effect}) {argv}: want {want}, {got}")
    assert wrong == [], "\n".join(wrong)
