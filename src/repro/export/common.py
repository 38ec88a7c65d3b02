"""What both exporters share: a checked recipe, its argv and env, ports, and the output file."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from repro import __version__
from repro.export.image import ExportError, PinnedImage, image_for_export
from repro.fsutil import write_atomic
from repro.recipe import check_recipe, render_env
from repro.recipe.render import render_node_argv, render_server_argv
from repro.schema.lock import HUB_OFFLINE_ENV, Locked
from repro.schema.option_catalog import Catalog
from repro.schema.recipe import SECRET_ENV_NAMES, Recipe

# Where SGLang (huggingface_hub) looks for the Hub cache inside the image, as in
# compose/sglang.yaml.
HUB_CACHE_IN_CONTAINER = "/root/.cache/huggingface"
# --dist-init-addr port on the first node (torch.distributed's rendezvous); LWS's SGLang
# example (docs/examples/sglang/lws.yaml) uses the same.
DEFAULT_DIST_PORT = 20000
HF_TOKEN = "HF_TOKEN"
# The weights pre-fill: a locked recipe's server runs with the Hub offline, so before it
# starts, each node downloads the pinned files (the lock's selection, as `repro fetch` does)
# into its Hub cache with the image's own huggingface_hub; files already there are kept.
PREFILL_CODE = (
    "import json, sys\n"
    "from huggingface_hub import snapshot_download\n"
    "for repo, sha, files in json.loads(sys.argv[1]):\n"
    "    print(snapshot_download(repo_id=repo, revision=sha, allow_patterns=files), flush=True)\n"
)


@dataclass(frozen=True)
class Prepared:
    """A recipe ready to be written out for a cluster."""

    recipe: Recipe
    catalog: Catalog
    image: PinnedImage | None  # None only for a Slurm squashfs without a pushed digest
    env: dict[str, str]
    # [repo, commit, [files]] the server reads offline; empty when it may download
    prefill: list[list[object]] = field(default_factory=list)

    def prefill_argv(self, python: str = "python3") -> list[str]:
        """The pre-fill step's command; [] when the server is not offline."""
        if not self.prefill:
            return []
        return [python, "-c", PREFILL_CODE, json.dumps(self.prefill, separators=(",", ":"))]

    @property
    def nodes(self) -> int:
        return self.recipe.topology.nodes

    @property
    def gpus(self) -> int:
        """GPUs per node to request (none for a simulated recipe)."""
        topo = self.recipe.topology
        return 0 if topo.gpu_runtime == "none" else topo.gpus

    @property
    def port(self) -> int:
        return self.recipe.server.port

    def argv(
        self,
        node_rank: str,
        dist_init_addr: str,
        nnodes: str | None = None,
        literal: Callable[[str], str] = str,
    ) -> list[str]:
        """The server argv; with the per-node options when the recipe spans nodes. `literal`
        escapes the recipe's own arguments for the cluster, not the per-node placeholders."""
        if self.nodes == 1:
            return [literal(arg) for arg in render_server_argv(self.recipe, self.catalog)]
        return render_node_argv(
            self.recipe,
            self.catalog,
            node_rank=node_rank,
            dist_init_addr=dist_init_addr,
            nnodes=nnodes,
            literal=literal,
        )

    @property
    def pinned(self) -> PinnedImage:
        if self.image is None:
            raise ExportError(f"{self.recipe.name}: no digest-pinned image")
        return self.image

    def header(self) -> str:
        """Provenance line for the top of a manifest."""
        source = self.recipe.source_path.name if self.recipe.source_path else self.recipe.name
        return f"written by repro {__version__} from {self.recipe.name} ({source})"


def prepare(
    locked: Locked, image: str | None, dist_port: int, image_required: bool = True
) -> Prepared:
    """Check the recipe (errors refuse), resolve the pinned image and the environment; what
    is written is the served recipe (`Locked.served`: the locked commits, the Hub offline)."""
    recipe = locked.served
    catalog = locked.need_catalog()  # None too when the image spec did not load
    served = replace(locked, recipe=recipe)
    errors = [f for f in check_recipe(served) if f.severity == "error"]
    if errors:
        lines = "; ".join(f"{f.file}: {f.path}: {f.message}" for f in errors)
        raise ExportError(
            f"{recipe.name} has {len(errors)} error(s): {lines}",
            hint="`repro recipe check` lists every problem",
        )
    env = render_env(recipe)
    inline = sorted(k for k in env if k.upper() in SECRET_ENV_NAMES)
    if inline:
        raise ExportError(
            f"{recipe.name}: env sets {', '.join(inline)}; secrets are never written into a "
            "manifest",
            hint="remove it; the Kubernetes export reads HF_TOKEN from a Secret, the Slurm "
            "script from the submitting shell's environment",
        )
    if recipe.topology.nodes > 1 and dist_port == recipe.server.port:
        raise ExportError(
            f"the dist-init port {dist_port} is the server port",
            hint="choose another --dist-port",
        )
    try:
        pinned: PinnedImage | None = image_for_export(locked, image)
    except ExportError:
        if image_required:
            raise
        pinned = None
    return Prepared(recipe, catalog, pinned, env, _prefill(locked, env))


def _prefill(locked: Locked, env: dict[str, str]) -> list[list[object]]:
    """What the pre-fill downloads: the locked commits' files, when the Hub is offline."""
    lock = locked.lock
    if lock is None or env.get(HUB_OFFLINE_ENV) != "1":
        return []
    return [[pin.repo, pin.sha, [f.path for f in pin.files]] for pin in lock.pins() if pin.sha]


def unpinned_warning(locked: Locked) -> str | None:
    """The warning for a manifest made from a recipe without its lock: `--revision` then names
    whatever the recipe asks for (a branch such as `main` moves), not a pinned commit."""
    if locked.lock is not None:
        return None
    recipe = locked.recipe
    asked = [f"{recipe.model.repo}@{recipe.model.revision}"]
    if recipe.drafter is not None:
        asked.append(f"{recipe.drafter.repo}@{recipe.drafter.revision}")
    return (
        f"warning: {recipe.name} is not locked: the manifest names revisions "
        f"{', '.join(asked)}, not pinned commits; run `repro lock {recipe.name}` first and "
        f"export its lock file (locks/{recipe.name}.lock.json)"
    )


def write_output(text: str, output: Path | None, mode: int = 0o644) -> None:
    """Write `text` to `output` atomically (a temp file renamed over it), or to stdout."""
    if output is None:
        sys.stdout.write(text)
        return
    output = Path(output)
    directory = output.parent if str(output.parent) else Path(".")
    if not directory.is_dir():
        raise ExportError(f"{directory}: no such directory", hint="create it first")
    write_atomic(output, text, mode)
