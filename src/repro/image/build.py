"""Build Dockerfile.sglang: a pinned base, an optional SGLang commit, and a patch series.

The tag is deterministic (`repro/<name>:<sglang version>-<hash>`): the hash covers the
Dockerfile, the build args, the patch contents and the scripts copied into the image, so the
same inputs always give the same tag and a changed patch always gives a new one.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from pydantic import BaseModel, Field
from python_on_whales.exceptions import DockerException

from repro import __version__, fileread
from repro.errors import ReproError
from repro.exitcodes import ExitCode
from repro.image.engine import client, image_exists
from repro.image.fingerprint import content_differences, content_document, content_fingerprint
from repro.image.leftovers import remove_stale, scratch_tag, workdir_prefix
from repro.progress import Progress, quiet
from repro.recipe.placeholder import refuse_placeholder_base
from repro.schema.lock import LockedImage
from repro.schema.option_catalog import Catalog
from repro.settings import GPU_ARCHS

DOCKERFILE = Path(__file__).resolve().parents[3] / "Dockerfile.sglang"
CONTEXT_SCRIPTS = Path(__file__).resolve().parent / "context"
MANIFEST_PATH = "/opt/repro/manifest.json"
SOURCE_URL = "https://github.com/repro-dev/repro"
# Labels that say when and from which checkout an image was built, not what it holds: two
# builds of one plan differ only in these.
BUILD_TIME_LABELS = frozenset(
    {"org.opencontainers.image.created", "org.opencontainers.image.revision", "dev.repro.version"}
)


class ImageBuildError(ReproError):
    exit_code = ExitCode.IMAGE_BUILD


class UnbuiltImage(ReproError):
    """The image under a plan's tag is not what building the plan gives."""


class PatchFile(BaseModel):
    """One patch of the series, with its bytes already on this machine."""

    name: str = Field(description="File name inside the image's patch directory, in order.")
    content: bytes

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.content).hexdigest()


class BuildPlan(BaseModel):
    """Everything that decides the content of a Dockerfile.sglang build."""

    name: str = Field(description="Image spec name; the repository is `repro/<name>`.")
    sglang_version: str
    base_ref: str = Field(description="FROM reference: digest-pinned, or a local base tag.")
    sglang_commit: str | None = None
    pip_packages: list[str] = Field(default_factory=list)
    gpu_archs: list[str] = Field(default_factory=list)
    patches: list[PatchFile] = Field(default_factory=list)

    def build_args(self) -> dict[str, str]:
        return {
            "BASE_IMAGE": self.base_ref,
            "SGLANG_COMMIT": self.sglang_commit or "",
            "PIP_PACKAGES": " ".join(self.pip_packages),
            GPU_ARCHS.name: ",".join(self.gpu_archs),
        }

    def content_hash(self) -> str:
        digest = hashlib.sha256(DOCKERFILE.read_bytes())
        digest.update(json.dumps(self.build_args(), sort_keys=True).encode())
        for script in sorted(CONTEXT_SCRIPTS.glob("*")):
            if script.name in ("apply-patches.sh", "write-manifest.py"):
                digest.update(script.name.encode() + script.read_bytes())
        for patch in self.patches:
            digest.update(patch.name.encode() + b"\0" + patch.content)
        return digest.hexdigest()

    @property
    def tag(self) -> str:
        return f"repro/{self.name}:{self.sglang_version}-{self.content_hash()[:12]}"


class BuiltImage(BaseModel):
    """What a build produced, as recorded in the lock."""

    tag: str
    image_id: str
    fingerprint: str
    manifest: dict[str, Any]

    def locked_image(self) -> LockedImage:
        """The lock's `image` section: identity plus a manifest summary (not the catalog)."""
        summary = {key: value for key, value in self.manifest.items() if key != "catalog"}
        return LockedImage(
            reference=self.tag,
            image_id=self.image_id,
            fingerprint=self.fingerprint,
            digest=None,
            manifest=summary,
        )

    def catalog(self) -> Catalog:
        """The image's own option catalog (from its manifest: `ServerArgs.add_cli_args`)."""
        data = {
            "sglang_version": self.manifest.get("sglang_version"),
            "source": f"ServerArgs.add_cli_args in image {self.tag}",
            "flags": self.manifest.get("catalog") or [],
            "builtin_speculative_algorithms": self.manifest.get("speculative_algorithms") or [],
            "env": self.manifest.get("environment") or [],
            "model_architectures": self.manifest.get("model_architectures") or [],
        }
        return Catalog.from_dict(data, origin=f"the manifest of image {self.tag}")


def build_image(
    plan: BuildPlan, on_log: Progress = quiet, *, rebuild: bool = False, verify: bool = False
) -> BuiltImage:
    """Build (or find, when the tag exists) the image of a plan and read its manifest.

    A tag found on the machine is used only when its labels say the plan's inputs built it;
    another image given that tag (retagged by hand) is built over. Labels are easy to keep
    while changing a file (`docker commit`), so with `verify` (the image a lock is about to
    record) a found tag must also be what the build produces: see `verify_tag`. `rebuild`
    builds over the tag whatever it holds. A base pinned by a placeholder digest is refused
    before Docker is asked for anything."""
    refuse_placeholder_base(plan.name, plan.base_ref, f"build image {plan.name}")
    for leftover in remove_stale():
        on_log(f"removed {leftover} (left by a build that was killed)")
    if rebuild or not image_exists(plan.tag) or not _built_from(plan, plan.tag):
        _run_build(plan, on_log)
    elif verify:
        verify_tag(plan, on_log)
    image = client().image.inspect(plan.tag)
    return BuiltImage(
        tag=plan.tag,
        image_id=image.id,
        fingerprint=content_fingerprint(image),
        manifest=read_manifest(plan.tag),
    )


def verify_tag(plan: BuildPlan, on_log: Progress = quiet) -> None:
    """Refuse the image under the plan's tag unless a build of the plan gives the same layers
    and config (less the labels that say when and by which checkout it was built).

    The check builds the plan again under a temporary tag, which the build cache makes a
    matter of seconds for an untouched image, and removes that tag whatever the outcome."""
    scratch = scratch_tag(plan.name)
    try:
        _run_build(plan, on_log, tag=scratch)
        differences = content_differences(
            content_document(plan.tag, BUILD_TIME_LABELS),
            content_document(scratch, BUILD_TIME_LABELS),
        )
    finally:
        if image_exists(scratch):
            client().image.remove(scratch)
    if differences:
        raise UnbuiltImage(
            f"the local image {plan.tag} is not what its build produces: "
            f"{', '.join(differences)} differ from a fresh build of the same Dockerfile and "
            "build args (changed in place under that tag since it was built?)",
            hint="build it again over the tag: `repro image build R --rebuild`",
        )


def _built_from(plan: BuildPlan, tag: str) -> bool:
    labels = client().image.inspect(tag).config.labels or {}
    return labels.get("dev.repro.content-hash") == plan.content_hash()


def read_manifest(image: str) -> dict[str, Any]:
    """The manifest written into an image at build time."""
    try:
        text = client().run(image, [MANIFEST_PATH], entrypoint="cat", remove=True)
    except DockerException as err:
        raise ImageBuildError(
            f"image {image} has no readable {MANIFEST_PATH}",
            hint="was it built by `repro image build`?",
        ) from err
    where = f"{MANIFEST_PATH} of image {image}"
    manifest = fileread.parse_json(str(text), where)
    if not isinstance(manifest, dict):
        raise ImageBuildError(f"{where}: a {type(manifest).__name__}, not a build manifest")
    return manifest


def _labels(plan: BuildPlan) -> dict[str, str]:
    return {
        "org.opencontainers.image.source": SOURCE_URL,
        "org.opencontainers.image.revision": _repo_revision(),
        "org.opencontainers.image.version": plan.tag.rsplit(":", 1)[1],
        "org.opencontainers.image.created": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "org.opencontainers.image.base.name": plan.base_ref,
        "dev.repro.image-spec": plan.name,
        "dev.repro.content-hash": plan.content_hash(),
        "dev.repro.sglang-version": plan.sglang_version,
        "dev.repro.patches": ",".join(f"{p.name}@{p.sha256}" for p in plan.patches),
        "dev.repro.version": __version__,
    }


def _run_build(plan: BuildPlan, on_log: Progress, tag: str | None = None) -> None:
    with tempfile.TemporaryDirectory(prefix=workdir_prefix()) as workdir:
        context = Path(workdir)
        _assemble_context(plan, context)
        lines: list[str] = []
        try:
            stream = client().build(
                context,
                file=context / "Dockerfile",
                tags=[tag or plan.tag],
                build_args=plan.build_args(),
                labels=_labels(plan),
                load=True,
                progress="plain",
                stream_logs=True,
            )
            for line in cast(Iterator[str], stream):
                lines.append(line.rstrip())
                on_log(line.rstrip())
        except DockerException as err:
            raise _explain_failure(plan, lines, err) from err


def _assemble_context(plan: BuildPlan, context: Path) -> None:
    shutil.copyfile(DOCKERFILE, context / "Dockerfile")
    repro_dir = context / "repro"
    patch_dir = repro_dir / "patches"
    patch_dir.mkdir(parents=True)
    for script in ("apply-patches.sh", "write-manifest.py"):
        shutil.copyfile(CONTEXT_SCRIPTS / script, repro_dir / script)
    for patch in plan.patches:
        (patch_dir / patch.name).write_bytes(patch.content)
    (patch_dir / "series").write_text("".join(f"{p.name}\n" for p in plan.patches))


def _explain_failure(plan: BuildPlan, lines: list[str], err: DockerException) -> ImageBuildError:
    stderr_lines = (err.stderr or "").splitlines()
    ours = [line.split("repro:", 1)[1].strip() for line in lines + stderr_lines if "repro:" in line]
    failing = [line for line in ours if "does not apply" in line]
    if failing:
        detail = "\n    ".join(ours[ours.index(failing[0]) :][:8])
        return ImageBuildError(
            f"building {plan.tag} failed: {detail}",
            hint="update the patch for this SGLang commit, or pin the commit it was made for",
        )
    tail = "\n    ".join((lines + stderr_lines)[-12:])
    return ImageBuildError(f"building {plan.tag} failed:\n    {tail}")


def _repo_revision() -> str:
    result = subprocess.run(
        ["git", "-C", str(DOCKERFILE.parent), "rev-parse", "HEAD"], capture_output=True, text=True
    )
    return result.stdout.strip() if result.returncode == 0 else "unknown"
