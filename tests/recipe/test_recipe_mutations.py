"""Mutated recipes (wrong types, missing fields, unknown keys, bad nesting, huge numbers,
non-UTF-8 bytes) end in a `RecipeError`, never another exception.

The mutations start from the shipped recipes and are written to a real file, which is loaded
with its `extends` chain, checked and rendered. Examples are derandomized (the same on every
run, so CI is stable); REPRO_MUTATION_SCALE multiplies their number for a longer hunt.
"""

from __future__ import annotations

import contextlib
import copy
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from repro.errors import RecipeError
from repro.lock.locked import resolved
from repro.recipe import check_recipe, load_recipe, render_env, render_server_argv, render_shell
from repro.recipe.images import catalog_for_recipe
from repro.recipe.yamlio import _all_field_paths
from repro.schema.recipe import Recipe

from .conftest import REPO_ROOT, SHIPPED_RECIPES, make_project

SCALE = float(os.environ.get("REPRO_MUTATION_SCALE", "1"))


def profile(examples: int) -> settings:
    return settings(
        max_examples=max(1, int(examples * SCALE)),
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )


ORIGINALS: dict[str, dict[str, Any]] = {
    name: yaml.safe_load((REPO_ROOT / "recipes" / f"{name}.yaml").read_text())
    for name in SHIPPED_RECIPES
}
ROOTS = [n for n, d in ORIGINALS.items() if "extends" not in d]
FIELD_NAMES = set(_all_field_paths(Recipe)) | set(Recipe.model_fields)

Loc = tuple[str | int, ...]

# Values that reach interesting branches, plus arbitrary data.
SPECIAL = st.sampled_from(
    [
        "",
        " ",
        "--tp-size",
        "--specualtive-algorithm",
        "DFLASH",
        "DDTREE",
        "kimi26-tp8",
        "mut",
        "sim",
        "HF_TOKEN",
        "hf_" + "a" * 34,
        "\x00",
        "é",
        "0.0.0.0",
        "main",
        "../recipes/demo.yaml",
        "a/b",
        "sha256:" + "0" * 64,
        0,
        -1,
        1,
        2**31,
        2**63,
        10**400,
        1e308,
        float("inf"),
        float("nan"),
        True,
        None,
        [],
        {},
    ]
)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20)
    | SPECIAL
)
JUNK = st.recursive(
    SCALARS,
    lambda kids: (
        st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=8), kids, max_size=3)
    ),
    max_leaves=6,
)
KEYS = (
    st.sampled_from(sorted(FIELD_NAMES))
    | st.text(max_size=12)
    | st.from_regex(r"[a-z_]{1,12}", fullmatch=True)
)


def walk(data: Any, loc: Loc = ()) -> Iterator[tuple[Loc, Any]]:
    yield loc, data
    if isinstance(data, dict):
        for key, value in data.items():
            yield from walk(value, (*loc, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from walk(value, (*loc, index))


def get(data: Any, loc: Loc) -> Any:
    for part in loc:
        data = data[part]
    return data


def put(data: Any, loc: Loc, value: Any) -> Any:
    if not loc:
        return value
    get(data, loc[:-1])[loc[-1]] = value
    return data


def outside_env(loc: Loc) -> bool:
    return not loc or loc[0] != "env"


@pytest.fixture(scope="module")
def proj(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_project(tmp_path_factory.mktemp("mutations")).root


def attempt(root: Path, content: bytes) -> Recipe | None:
    """Load, check and render a recipe file; only a RecipeError may come out."""
    path = root / "recipes" / "mut.yaml"
    path.write_bytes(content)
    recipe = load_recipe(path, root / "recipes")
    check_recipe(resolved(recipe))
    try:
        catalog = catalog_for_recipe(recipe)
        render_server_argv(recipe, catalog)
        render_shell(recipe, catalog)
    except RecipeError:
        pass
    render_env(recipe)
    return recipe


def dump(data: Any) -> bytes:
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return yaml.dump(data, Dumper=dumper, allow_unicode=True, sort_keys=False).encode("utf-8")


def must_fail(root: Path, data: Any) -> RecipeError:
    with pytest.raises(RecipeError) as info:
        attempt(root, dump(data))
    return info.value


@st.composite
def mutated(draw: st.DrawFn) -> Any:
    data: Any = copy.deepcopy(ORIGINALS[draw(st.sampled_from(SHIPPED_RECIPES))])
    for _ in range(draw(st.integers(1, 3))):
        locs = [loc for loc, _ in walk(data)]
        loc = draw(st.sampled_from(locs))
        op = draw(st.sampled_from(["set", "delete", "add", "wrap", "dict", "junk"]))
        target = get(data, loc)
        if op == "set":
            data = put(data, loc, draw(SCALARS))
        elif op == "junk":
            data = put(data, loc, draw(JUNK))
        elif op == "delete" and loc:
            del get(data, loc[:-1])[loc[-1]]
        elif op == "add" and isinstance(target, dict):
            target[draw(KEYS)] = draw(JUNK)
        elif op == "wrap":
            data = put(data, loc, [target])
        elif op == "dict":
            data = put(data, loc, {draw(KEYS): target})
    return data


@profile(400)
@given(data=mutated())
def test_mutations_end_in_recipe_error_or_a_valid_recipe(proj: Path, data: Any) -> None:
    try:
        attempt(proj, dump(data))
    except RecipeError as err:
        assert err.problems and all(isinstance(line, str) and line for line in err.problems)
        assert "Traceback" not in err.message


@st.composite
def with_unknown_key(draw: st.DrawFn) -> tuple[Any, str]:
    data = copy.deepcopy(ORIGINALS[draw(st.sampled_from(SHIPPED_RECIPES))])
    mappings = [loc for loc, v in walk(data) if isinstance(v, dict) and outside_env(loc)]
    loc = draw(st.sampled_from(mappings))
    key = draw(
        st.from_regex(r"[a-z][a-z_]{0,14}", fullmatch=True).filter(lambda k: k not in FIELD_NAMES)
    )
    get(data, loc)[key] = draw(JUNK)
    return data, key


@profile(120)
@given(case=with_unknown_key())
def test_unknown_keys_are_refused_by_name(proj: Path, case: tuple[Any, str]) -> None:
    data, key = case
    assert f"unknown key '{key}'" in must_fail(proj, data).message


@st.composite
def with_wrong_type(draw: st.DrawFn) -> Any:
    data = copy.deepcopy(ORIGINALS[draw(st.sampled_from(SHIPPED_RECIPES))])
    leaves = [
        loc
        for loc, v in walk(data)
        if loc and outside_env(loc) and not isinstance(v, dict | list) and v is not None
    ]
    loc = draw(st.sampled_from(leaves))
    if isinstance(get(data, loc), str):
        value: Any = draw(st.integers() | st.lists(st.text(max_size=3), max_size=2))
    else:
        value = draw(st.text(max_size=10) | st.lists(st.integers(), max_size=2))
    return put(data, loc, value)


@profile(150)
@given(data=with_wrong_type())
def test_wrong_types_are_refused(proj: Path, data: Any) -> None:
    must_fail(proj, data)


@st.composite
def with_missing_field(draw: st.DrawFn) -> tuple[Any, str]:
    data = copy.deepcopy(ORIGINALS[draw(st.sampled_from(ROOTS))])
    candidates = [("image",), ("model",), ("topology",), ("model", "repo"), ("topology", "gpus")]
    if "speculative" in data:
        candidates.append(("speculative", "algorithm"))
    if data.get("drafter"):
        candidates.append(("drafter", "repo"))
    loc = draw(st.sampled_from(candidates))
    del get(data, loc[:-1])[loc[-1]]
    return data, ".".join(str(p) for p in loc)


@profile(50)
@given(case=with_missing_field())
def test_missing_required_fields_are_named(proj: Path, case: tuple[Any, str]) -> None:
    data, path = case
    assert f"{path}: required field is missing" in must_fail(proj, data).message


@st.composite
def with_bad_nesting(draw: st.DrawFn) -> Any:
    data = copy.deepcopy(ORIGINALS[draw(st.sampled_from(SHIPPED_RECIPES))])
    sections = [loc for loc, v in walk(data) if loc and isinstance(v, dict)]
    loc = draw(st.sampled_from(sections))
    wrapped = get(data, loc)
    return put(data, loc, draw(st.sampled_from([[wrapped], "text", 7, [[wrapped]]])))


@profile(120)
@given(data=with_bad_nesting())
def test_bad_nesting_is_refused(proj: Path, data: Any) -> None:
    must_fail(proj, data)


WITH_NUMBERS = [
    name
    for name, data in ORIGINALS.items()
    if any(isinstance(v, int | float) and not isinstance(v, bool) for _, v in walk(data))
]


@st.composite
def with_huge_number(draw: st.DrawFn) -> Any:
    data = copy.deepcopy(ORIGINALS[draw(st.sampled_from(WITH_NUMBERS))])
    numbers = [
        loc
        for loc, v in walk(data)
        if outside_env(loc) and isinstance(v, int | float) and not isinstance(v, bool)
    ]
    loc = draw(st.sampled_from(numbers))
    exponent = draw(st.integers(min_value=12, max_value=500))
    sign = draw(st.sampled_from([1, -1]))
    value: Any = sign * 10**exponent
    if draw(st.booleans()):
        value = float("inf") * sign if exponent > 308 else float(value)
    return put(data, loc, value)


@profile(120)
@given(data=with_huge_number())
def test_huge_numbers_are_refused(proj: Path, data: Any) -> None:
    must_fail(proj, data)


INVALID_UTF8 = st.sampled_from(
    [b"\xff", b"\xfe", b"\xc3", b"\x80", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\xc0\xaf"]
)


@profile(100)
@given(
    name=st.sampled_from(SHIPPED_RECIPES),
    position=st.floats(min_value=0, max_value=1),
    bad=INVALID_UTF8,
)
def test_non_utf8_bytes_are_refused(proj: Path, name: str, position: float, bad: bytes) -> None:
    text = (REPO_ROOT / "recipes" / f"{name}.yaml").read_bytes()
    cut = int(len(text) * position)
    with pytest.raises(RecipeError) as info:
        attempt(proj, text[:cut] + bad + text[cut:])
    assert "not UTF-8 text" in info.value.message


@profile(150)
@given(
    name=st.sampled_from(SHIPPED_RECIPES),
    position=st.floats(min_value=0, max_value=1),
    noise=st.binary(min_size=1, max_size=12),
)
def test_random_bytes_never_crash(proj: Path, name: str, position: float, noise: bytes) -> None:
    text = (REPO_ROOT / "recipes" / f"{name}.yaml").read_bytes()
    cut = int(len(text) * position)
    with contextlib.suppress(RecipeError):
        attempt(proj, text[:cut] + noise + text[cut:])
