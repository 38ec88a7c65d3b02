"""SGLang's own start-up, run up to the first step that needs a GPU, on a recipe's argv.

Run with the engine's Python (the SGLang of the recipe's era first on its path); it does not
import repro. Reads a JSON list on stdin, one ``{"argv": [...], "env": {...}}`` per recipe;
prints a READY line once SGLang is imported, then one RESULT line per recipe as it finishes
(the caller gives each its own deadline): what SGLang resolved, or the step that refused and
SGLang's own message. One process serves the whole list, since
importing SGLang is most of the time; each recipe's environment is set for it alone. The
steps are SGLang's, in the order its launcher runs them:

1. ``prepare_server_args(argv)`` (sglang/srt/server_args.py): the parser and, in releases
   before 0.5.23, every resolution handler (``ServerArgs.__post_init__``);
2. ``ServerArgs.resolve_once()`` where the release has it (0.5.23: every hook of
   ``srt/arg_groups/pipeline.py``), then ``check_server_args()`` (called by the engine's
   ``_launch_subprocesses`` in srt/entrypoints/engine.py);
3. the target's ``ModelConfig.from_server_args`` (srt/configs/model_config.py) and its model
   class (``get_model_architecture``, srt/model_loader/utils.py);
4. the drafter's: its ModelConfig as the draft worker builds it (the target's context
   length) and class, and for DFLASH ``parse_dflash_draft_config``
   (srt/speculative/dflash_utils.py): block size, target layer ids, mask token.

No GPU is used. What SGLang's handlers ask of the device (is it CUDA, its compute capability,
its memory) is answered for the recipe's GPU by one named stand-in, ``_as_recipe_gpu``: in
0.5.23 through SGLang's own ``override_platform`` (srt/runtime_context.py), and in every
release by the probe functions of ``sglang.srt.utils.common`` as the start-up modules hold
them. Nothing else is faked: a handler that reaches for the device in another way fails as it
would on any host without a GPU, and the caller reports it.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import traceback
from typing import Any

# What SGLang's hooks report while they change a value: kept, in order, for the caller.
_notes: list[str] = []
# Set after every recipe's environment: nothing the start-up code does reaches the Hub.
OFFLINE = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
}
# Each answer on a line of its own (SGLang may print its own lines): drystart.py's RESULT, READY.
RESULT = "repro-drystart-result "
READY = "repro-drystart-ready"


class _Collect(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.WARNING:
            _notes.append(record.getMessage())


def _plain(value: Any) -> Any:
    """A JSON-able form of a ServerArgs value (enums, paths and objects as text)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return str(value)


def _fields(server_args: Any) -> dict[str, Any]:
    """Every option field of a ServerArgs, as resolved. Before 0.5.23 the handlers write the
    fields of a dataclass; 0.5.23 keeps the raw input in a msgspec Struct and stacks each
    hook's decisions beside it, read through ``resolution_result``
    (srt/arg_groups/overrides.py)."""
    names = getattr(type(server_args), "__struct_fields__", None)
    if names is None:
        import dataclasses

        names = [f.name for f in dataclasses.fields(server_args)]
    try:
        from sglang.srt.arg_groups.overrides import resolution_result
    except ImportError:
        return {name: _plain(getattr(server_args, name, None)) for name in names}
    return {name: _plain(resolution_result(server_args, name)) for name in names}


def _deciders(server_args: Any) -> dict[str, str]:
    """Which hook decided each field last (0.5.23's declarations; empty before it)."""
    found: dict[str, str] = {}
    for source, declared in getattr(server_args, "_resolved_overrides", None) or ():
        for name in declared:
            found[name] = str(source)
    return found


def _raw(argv: list[str]) -> dict[str, Any]:
    """The options as parsed, before any handler: SGLang's own parser on the argv."""
    from sglang.srt.server_args import ServerArgs

    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    return {k: _plain(v) for k, v in vars(parser.parse_args(argv)).items()}


def _failure(step: str, err: BaseException) -> dict[str, Any]:
    if isinstance(err, SystemExit):
        message = f"SGLang's parser refused the arguments (exit {err.code})"
    else:
        message = str(err) or type(err).__name__
    frames = traceback.extract_tb(err.__traceback__)
    # the last SGLang line: where SGLang decided, even when the exception rose in torch
    ours = [f for f in frames if "/sglang/" in f.filename] or frames
    where = f"sglang/{ours[-1].filename.split('/sglang/')[-1]}:{ours[-1].lineno}" if ours else ""
    return {"step": step, "type": type(err).__name__, "message": message, "where": where}


def _architecture(model_config: Any) -> dict[str, Any]:
    from sglang.srt.model_loader.utils import get_model_architecture

    model_class, name = get_model_architecture(model_config)
    hf = model_config.hf_config
    return {
        "architecture": name,
        "class": f"{model_class.__module__}.{model_class.__qualname__}",
        "model_type": getattr(hf, "model_type", None),
        "num_hidden_layers": getattr(model_config, "num_hidden_layers", None),
        "hidden_size": getattr(model_config, "hidden_size", None),
        "vocab_size": getattr(model_config, "vocab_size", None),
    }


def _drafter(server_args: Any, target: Any) -> dict[str, Any] | None:
    """The drafter's ModelConfig as SGLang's draft worker builds it: its path and revision,
    and the target's context length, since the draft runs at the target's positions
    (``build_draft_tp_worker`` in srt/speculative/draft_worker_common.py, 0.5.23;
    ``DFlashWorkerV2.__init__`` in srt/speculative/dflash_worker_v2.py, 0.5.15)."""
    path = getattr(server_args, "speculative_draft_model_path", None)
    if not path:
        return None
    from sglang.srt.configs.model_config import ModelConfig

    config = ModelConfig.from_server_args(
        server_args,
        model_path=path,
        model_revision=getattr(server_args, "speculative_draft_model_revision", None),
        is_draft_model=True,
        context_length=target.context_len,
    )
    found = _architecture(config)
    algorithm = str(getattr(server_args, "speculative_algorithm", "") or "")
    if algorithm.upper().endswith("DFLASH") or algorithm.upper() == "DDTREE":
        from sglang.srt.speculative.dflash_utils import parse_dflash_draft_config

        parsed = parse_dflash_draft_config(draft_hf_config=config.hf_config)
        found["dflash"] = {
            key: _plain(getattr(parsed, key, None))
            for key in ("block_size", "target_layer_ids", "num_target_layers", "mask_token_id")
        }
    return found


def _as_recipe_gpu(gpu: dict[str, Any]) -> None:
    """Make SGLang's start-up see the recipe's GPU: ``{"sm": 120, "memory_mib": 91552,
    "cuda": "13.0"}``. Only the device queries its handlers make are answered."""
    import importlib
    import pkgutil

    import sglang.srt.arg_groups as groups
    import torch
    from sglang.srt.models.registry import ModelRegistry

    # Every module imported as this host imports it before the stand-in answers: a model
    # module that read "CUDA" at import would reach for kernels this host does not have.
    ModelRegistry.get_supported_archs()
    for found in pkgutil.iter_modules(groups.__path__):
        try:
            importlib.import_module(f"{groups.__name__}.{found.name}")
        except Exception:  # a hook module of a feature this host cannot import: not asked
            continue
    sm = int(gpu["sm"])
    major, minor = divmod(sm, 10)
    facts = {
        "is_cuda": True,
        "is_hip": False,
        "is_npu": False,
        "is_xpu": False,
        "is_musa": False,
        "is_mps": False,
        "is_sm90": major == 9,
        "is_sm100": major == 10,
        "is_sm100_or_sm110": major in (10, 11),
        "is_sm110": major == 11,
        "is_sm120": major == 12,
        "is_blackwell": major in (10, 11, 12),
        "is_hopper_with_cuda_12_3": major == 9,
        "has_flashinfer": True,  # every CUDA image of SGLang ships flashinfer
        "device_sm": sm,
        "device_capability": (major, minor),
    }
    probes = {
        "is_cuda": True,
        "is_cuda_alike": True,
        "is_hip": False,
        "is_npu": False,
        "is_xpu": False,
        "is_musa": False,
        "is_sm90_supported": major == 9,
        "is_sm100_supported": major == 10,
        "is_sm120_supported": major == 12,
        "is_sm120": sm == 120,
        "is_blackwell_supported": major in (10, 11, 12),
        "is_blackwell": major in (10, 11, 12),
        "is_flashinfer_available": True,
        "get_device_sm": sm,
        "get_device_capability": (major, minor),
        "get_device_memory_capacity": float(gpu["memory_mib"]),
        "get_nvgpu_memory_capacity": float(gpu["memory_mib"]),
    }
    torch.version.cuda = str(gpu.get("cuda") or "13.0")
    # releases before 0.5.23 ask torch for the capability inside utils.common's probes
    torch.cuda.get_device_capability = lambda *_a, **_k: (major, minor)
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith("sglang.srt"):
            continue
        for attr, value in probes.items():
            if callable(getattr(module, attr, None)):
                setattr(module, attr, lambda *_a, _v=value, **_k: _v)
    try:
        from sglang.srt.runtime_context import override_platform
    except ImportError:  # releases before 0.5.23 ask utils.common's probes alone
        return
    override_platform(**facts).install()


def probe(argv: list[str]) -> dict[str, Any]:
    import sglang
    from sglang.srt import server_args as module

    result: dict[str, Any] = {"sglang_version": sglang.__version__}
    try:
        raw = _raw(argv)
    except BaseException as err:  # argparse exits: the parser's refusal is the answer
        result["failed"] = _failure("parse", err)
        return result
    step = "prepare_server_args"
    try:
        server_args = module.prepare_server_args(argv)
        if hasattr(server_args, "resolve_once"):
            step = "resolve_once"
            server_args.resolve_once()
        step = "check_server_args"
        server_args.check_server_args()
    except BaseException as err:
        result["failed"] = _failure(step, err)
        return result
    # What the handlers said; the model registry's import notes that follow are not theirs.
    result["notes"] = list(dict.fromkeys(_notes))
    resolved = _fields(server_args)
    deciders = _deciders(server_args)
    result["changed"] = {
        name: {"asked": raw.get(name), "resolved": value, "by": deciders.get(name)}
        for name, value in resolved.items()
        if name in raw and raw[name] != value
    }
    result["resolved"] = resolved
    try:
        from sglang.srt.configs.model_config import ModelConfig

        step = "model_config"
        target = ModelConfig.from_server_args(server_args)
        result["model"] = _architecture(target)
        step = "draft_model_config"
        result["drafter"] = _drafter(server_args, target)
    except BaseException as err:
        result["failed"] = _failure(step, err)
    return result


def _one(request: dict[str, Any]) -> dict[str, Any]:
    saved = dict(os.environ)
    os.environ.update(request.get("env") or {})
    os.environ.update(OFFLINE)
    if request.get("gpu"):
        _as_recipe_gpu(request["gpu"])
    _notes.clear()
    try:
        result = probe(list(request["argv"]))
        result.setdefault("notes", list(dict.fromkeys(_notes)))
        return result
    finally:
        os.environ.clear()
        os.environ.update(saved)


def main() -> None:
    requests = json.loads(sys.stdin.read())
    os.environ.update(OFFLINE)
    import sglang.srt.server_args  # noqa: F401  (the import's time is not a recipe's)

    # SGLang's handlers log what they change under the "sglang" logger; prepare_server_args
    # resets the root logger's handlers (logging.basicConfig(force=True)), not this one's.
    logging.getLogger("sglang").addHandler(_Collect())
    print(f"\n{READY}", flush=True)
    for request in requests:
        print(f"\n{RESULT}{json.dumps(_one(request))}", flush=True)


if __name__ == "__main__":
    main()
