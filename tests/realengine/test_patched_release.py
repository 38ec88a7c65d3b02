"""An image's remote patch is a build input pinned like a wheel: fetched once from a real HTTPS
server into the patch cache, held to the sha256 the image spec pins, applied over SGLang
0.5.23's own start-up code, and `repro recipe check` refuses through the patched code. A
changed patch is refused naming both hashes; a missing one is named with the command that
puts it in place. The patch is the test's own: check_server_args refuses --enable-mixed-chunk.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from hubserver.tls import HttpsFiles
from repro.cli import main
from repro.lock import patchcache
from repro.realengine.patched_release import (
    Patch,
    PatchDoesNotApply,
    patched_package,
    site_packages_package,
)
from repro.recipe.images import load_image_spec
from repro.settings import SGLANG_PYTHON
from tests.recipe.conftest import Project, make_project

pytestmark = pytest.mark.real_sglang

MARK = "refused by repro's test patch"
SERVER_ARGS = "python/sglang/srt/server_args.py"
SPEC = "patched-cpu"
NAME = "refuse-mixed-chunk"


def _package() -> Path:
    package = site_packages_package(Path(SGLANG_PYTHON.text()))
    assert package is not None, "make sglang-engine installs .venv-sglang"
    return package


def _diff(package: Path) -> bytes:
    """A diff of SGLang 0.5.23's server_args.py, -p1 from a checkout's root as a pull
    request's is: check_server_args refuses --enable-mixed-chunk."""
    old = (package / "srt" / "server_args.py").read_text().splitlines(keepends=True)
    at = old.index("    def check_server_args(self):\n") + 1
    new = [
        *old[:at],
        "        if self.enable_mixed_chunk:\n",
        f'            raise ValueError("--enable-mixed-chunk is {MARK}")\n',
        *old[at:],
    ]
    body = "".join(difflib.unified_diff(old, new, f"a/{SERVER_ARGS}", f"b/{SERVER_ARGS}"))
    return f"diff --git a/{SERVER_ARGS} b/{SERVER_ARGS}\n{body}".encode()


@pytest.fixture(scope="module")
def twin_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hub")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, twin_cache: Path) -> Project:
    """A copy of the project with the test's image (0.5.23 CPU + the remote patch, pinned)
    and a recipe on it that asks for --enable-mixed-chunk; an empty patch cache."""
    monkeypatch.setenv("HF_HUB_CACHE", str(twin_cache))
    monkeypatch.setenv("REPRO_PATCH_CACHE", str(tmp_path / "patches"))
    monkeypatch.delenv("REPRO_RECIPES_DIR", raising=False)
    monkeypatch.delenv("REPRO_IMAGES_DIR", raising=False)
    proj = make_project(tmp_path / "proj")
    monkeypatch.chdir(proj.root)
    return proj


def _pin(project: Project, url: str, diff: bytes) -> None:
    base = (project.images / "sglang-0.5.23-cpu.yaml").read_text()
    project.write(
        f"{SPEC}.yaml",
        base + f"patch_set:\n  name: {NAME}\n  remote:\n    - name: {NAME}\n"
        f"      url: {url}\n      sha256: {hashlib.sha256(diff).hexdigest()}\n",
        folder="images",
    )
    project.recipe(
        "patched",
        f"extends: qwen3-tiny-cpu\nimage: {SPEC}\nserver:\n  extra_args: [--device, cpu, "
        "--attention-backend, torch_native, --max-total-tokens, '16384', --enable-mixed-chunk]\n",
    )


def _check(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["recipe", "check", *args])
    return result.exit_code, result.output


def _engine(out: str) -> dict[str, object]:
    """The one recipe's engine result of `recipe check --json` (its summary line follows)."""
    (result,), _end = json.JSONDecoder().raw_decode(out, out.index("[\n"))
    engine: dict[str, object] = result["engine"]
    return engine


def test_a_pinned_remote_patch_is_fetched_once_applied_and_refuses_through_sglang(
    project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    diff = _diff(_package())
    with HttpsFiles(tmp_path) as https:
        monkeypatch.setenv("SSL_CERT_FILE", str(https.cert_file))
        https.files["pr.diff"] = diff
        _pin(project, https.url("pr.diff"), diff)
        spec = load_image_spec(SPEC)
        assert spec.patch_set is not None
        remote = spec.patch_set.remote[0]
        assert patchcache.fetch(SPEC, remote, remote.sha256) == diff
        https.files["pr.diff"] = b"moved\n"  # fetched once: the cache answers from now on
        assert patchcache.fetch(SPEC, remote, remote.sha256) == diff
    assert (tmp_path / "patches" / f"{remote.sha256}.diff").read_bytes() == diff

    code, out = _check("patched")
    assert code == 1, out
    assert "server.extra_args[6]: SGLang 0.5.23 refuses to start" in out
    assert f"--enable-mixed-chunk is {MARK}" in out
    code, out = _check("qwen3-tiny-cpu")  # the same release, its image unpatched
    assert code == 0, out


def test_a_changed_patch_is_refused_by_its_sha256(
    project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    diff = _diff(_package())
    pinned = hashlib.sha256(diff).hexdigest()
    with HttpsFiles(tmp_path) as https:
        monkeypatch.setenv("SSL_CERT_FILE", str(https.cert_file))
        https.files["pr.diff"] = diff + b"# moved\n"
        _pin(project, https.url("pr.diff"), diff)
        remote = load_image_spec(SPEC).patch_set.remote[0]  # type: ignore[union-attr]
        moved = hashlib.sha256(https.files["pr.diff"]).hexdigest()
        with pytest.raises(patchcache.PatchChanged, match=f"{moved}, pinned {pinned}"):
            patchcache.fetch(SPEC, remote, pinned)
    cached = tmp_path / "patches" / f"{pinned}.diff"
    assert not cached.exists()  # nothing of the moved diff was kept
    cached.parent.mkdir(parents=True)
    cached.write_bytes(diff.replace(b"enable_mixed_chunk", b"enable_mixed_chunks"))
    edited = hashlib.sha256(cached.read_bytes()).hexdigest()
    _code, out = _check("patched", "--json")
    assert _engine(out)["not_run"] == (
        f"engine dry-start not run: patch {NAME} changed: the cached file {cached} has sha256 "
        f"{edited}, pinned {pinned}"
    )


def test_a_missing_patch_is_named_with_the_command_that_puts_it_in_place(
    project: Project, tmp_path: Path
) -> None:
    diff = _diff(_package())
    _pin(project, "https://127.0.0.1:9/pr.diff", diff)
    code, out = _check("patched", "--json")
    assert code == 0, out
    stand_ins = _engine(out)["stand_ins"]
    pinned = hashlib.sha256(diff).hexdigest()
    where = tmp_path / "patches" / f"{pinned}.diff"
    assert (
        f"patch set {NAME} not applied: patch {NAME} is not in the patch cache ({where}); "
        f"`repro lock` fetches it from its URL, or `repro image patch add {SPEC} {NAME} FILE` "
        "puts a copy in place; the release's own start-up code ran instead"
    ) in stand_ins  # type: ignore[operator]
    patch_file = tmp_path / "pr.diff"
    patch_file.write_bytes(diff)
    result_add = CliRunner().invoke(main, ["image", "patch", "add", SPEC, NAME, str(patch_file)])
    assert result_add.exit_code == 0, result_add.output
    assert result_add.output.splitlines() == [str(where), f"sha256 {pinned}"]


def test_a_diff_that_does_not_fit_the_release_is_refused_naming_file_and_hunk(
    tmp_path: Path,
) -> None:
    diff = _diff(_package()).replace(b"    def check_server_args(self):", b"    def nope(self):")
    patch = Patch(NAME, hashlib.sha256(diff).hexdigest(), diff)
    with pytest.raises(PatchDoesNotApply) as refused:
        patched_package("0.5.23", _package(), [patch], tmp_path / "patched")
    assert refused.value.message.startswith(
        f"patch {NAME} does not apply to SGLang 0.5.23: {SERVER_ARGS}, hunk @@ -"
    )
    assert list((tmp_path / "patched").iterdir()) == []  # nothing half-made is left
