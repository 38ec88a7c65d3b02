"""SGLang 0.5.23's own front end with repro's scheduler process behind it.

`python -m repro.sim.sglang_frontend <SGLang argv>` (what `repro sim serve --frontend sglang`
runs, in a Python that has SGLang installed) parses the argv with SGLang's own ServerArgs and
calls `launch_server(server_args, run_scheduler_process_func=run_scheduler_process)`
(srt/entrypoints/http_server.py): SGLang's HTTP server, tokenizer manager and detokenizer run
as they do on a GPU, and `run_scheduler_process` serves the forward steps from the simulator
(sim/sglang_scheduler.py). With `--device cuda --speculative-algorithm DFLASH` the arguments
resolve on a CPU host (SGLang's speculative hooks set num_steps 1, topk 1 and 48 running
requests), so the speculative paths run for real without a GPU. Timing and acceptance come
from the simulator's profile (REPRO_SIM_PROFILE and the other REPRO_SIM_* knobs of
sim/config.py). One DP rank, TP 1 and PP 1 only.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import time
from typing import Any

from repro.sim.frontend_argv import ARGV_ENV

logger = logging.getLogger("sglang.srt.managers.scheduler")


def run_scheduler_process(
    server_args: Any,
    port_args: Any,
    gpu_id: int,
    tp_rank: int,
    pp_rank: int,
    dp_rank: int | None,
    pipe_writer: Any,
    *_display_ranks: Any,
) -> None:
    """scheduler.py run_scheduler_process's contract: publish this rank's context, send the
    ready handshake on the pipe, serve until a ShutdownReq."""
    from sglang.srt.managers.scheduler import configure_scheduler_process
    from sglang.srt.runtime_context import SpawnRanks, publish

    publish(
        server_args,
        role="scheduler",
        ranks=SpawnRanks(world_rank=0, dp_rank=dp_rank, gpu_id=gpu_id),
    )
    configure_scheduler_process(server_args, gpu_id)
    try:
        asyncio.run(_serve(server_args, port_args, pipe_writer))
    except Exception as e:  # the launcher waits on the pipe: say why instead of hanging
        logger.exception(f"repro scheduler failed: {e}")
        pipe_writer.send({"status": "error", "message": str(e)})
        raise


async def _serve(server_args: Any, port_args: Any, pipe_writer: Any) -> None:
    import zmq
    import zmq.asyncio
    from sglang.srt.managers import io_struct as io
    from sglang.srt.mem_cache.hicache_storage import disabled_l3_layout
    from sglang.srt.observability.metrics_collector import SchedulerMetricsCollector
    from sglang.srt.observability.startup_time import build_scheduler_startup_time
    from sglang.srt.utils.hf_transformers_utils import get_tokenizer
    from sglang.srt.utils.network import get_zmq_socket

    from repro.sim.sglang_scheduler import FrontendScheduler, sim_config

    started = time.perf_counter()
    cfg = sim_config(server_args)
    if cfg.dp_size != 1 or cfg.args.tp_size != 1 or cfg.args.pp_size != 1:
        raise ValueError("repro's scheduler serves one rank: --dp-size, --tp-size, --pp-size 1")
    hf = get_tokenizer(
        server_args.tokenizer_path or server_args.model_path,
        trust_remote_code=bool(server_args.trust_remote_code),
    )
    context = zmq.asyncio.Context(2)  # scheduler_components/ipc_channels.py
    sockets = {
        "input": get_zmq_socket(context, zmq.PULL, port_args.scheduler_input_ipc_name, False),
        "tokenizer": get_zmq_socket(context, zmq.PUSH, port_args.tokenizer_ipc_name, False),
        "detokenizer": get_zmq_socket(context, zmq.PUSH, port_args.detokenizer_ipc_name, False),
    }
    scheduler = FrontendScheduler(cfg, hf, sockets)
    metrics = SchedulerMetricsCollector.init_new(
        server_args=server_args,
        enable_priority_scheduling=False,
        enable_lora=False,
        enable_hierarchical_cache=False,
    )
    scheduler.collector = metrics.collector
    if scheduler.collector is not None:
        scheduler.collector.emit_constants(
            max_total_num_tokens=cfg.kv_tokens,
            max_total_num_tokens_swa=None,
            weight_memory_usage_gb=0.0,
            kv_cache_memory_usage_gb=0.0,
            graph_memory_usage_gb={},
            max_running_requests_under_SLO=None,
            page_size=1,
            num_pages=cfg.kv_tokens,
            context_len=cfg.context_length,
            startup_available_gpu_memory_gb=0.0,
        )
    startup = build_scheduler_startup_time(
        target_load_weight=0.0,
        draft_load_weight=0.0,
        kv_cache_allocation=0.0,
        scheduler_e2e=time.perf_counter() - started,
        target_cuda_graph=None,
        draft_cuda_graph=None,
    )
    pipe_writer.send(  # scheduler.py get_init_info
        {
            "status": "ready",
            "max_total_num_tokens": cfg.kv_tokens,
            "max_req_input_len": min(cfg.context_length, cfg.kv_tokens) - 1,
            "startup_time": startup,
            "hicache_object_layout": disabled_l3_layout(
                "Hierarchical cache is disabled", page_size=1
            ),
        }
    )
    logger.info(
        f"repro scheduler (simulated forward steps, profile {cfg.profile.name!r}): "
        f"max_running_requests={cfg.max_running_requests}, max_total_tokens={cfg.kv_tokens}, "
        f"speculative={cfg.algorithm} draft_tokens={cfg.draft_tokens}"
    )
    loop = asyncio.ensure_future(scheduler.run())
    try:
        while True:
            obj = await io.async_sock_recv(sockets["input"])
            if not _handle(scheduler, obj, startup):
                break
    finally:
        loop.cancel()
        context.destroy(linger=0)


def _handle(scheduler: Any, obj: Any, startup: dict[str, Any]) -> bool:
    """One message from the tokenizer manager (scheduler.py's request dispatcher, for the
    requests this scheduler serves); False on ShutdownReq."""
    from sglang.srt.managers import io_struct as io

    if isinstance(obj, io.TokenizedGenerateReqInput):
        scheduler.add(obj)
    elif isinstance(obj, io.BatchTokenizedGenerateReqInput):
        for one in obj.batch:
            scheduler.add(one)
    elif isinstance(obj, io.AbortReq):
        scheduler.abort_rid(obj)
    elif isinstance(obj, io.FlushCacheReqInput):
        scheduler.send("tokenizer", io.FlushCacheReqOutput(success=scheduler.flush()))
    elif isinstance(obj, io.GetInternalStateReq):
        scheduler.send(
            "tokenizer", io.GetInternalStateReqOutput(internal_state=_state(scheduler, startup))
        )
    elif isinstance(obj, (io.FreezeGCReq, io.ConfigureLoggingReq)):
        if isinstance(obj, io.ConfigureLoggingReq) and obj.log_level is not None:
            logging.getLogger().setLevel(obj.log_level.upper())
        scheduler.send("detokenizer", obj)  # the detokenizer takes them from the scheduler
    elif isinstance(obj, io.ShutdownReq):
        return False
    else:
        logger.warning(f"repro scheduler: {type(obj).__name__} is not served here; ignored")
    return True


def _state(scheduler: Any, startup: dict[str, Any]) -> dict[str, Any]:
    """scheduler_components/internal_state.py get_internal_state, from the simulator's
    counts (no memory is used: sizes are 0)."""
    from sglang.srt.managers.scheduler_components.memory_usage import build_memory_usage
    from sglang.srt.runtime_context import get_context
    from sglang.srt.utils.msgspec_utils import msgspec_to_builtins

    state = get_context().resolved_server_args_dict()
    state.pop("custom_sigquit_handler", None)
    state.update(
        world_size=1,
        startup_time=startup,
        effective_max_running_requests_per_dp=scheduler.cfg.max_running_requests,
        last_gen_throughput=scheduler.last_gen_throughput,
        memory_usage=build_memory_usage(
            weight_gb=0.0,
            kv_cache_gb=0.0,
            startup_available_gb=0.0,
            token_capacity=scheduler.kv_total,
            token_capacity_swa=None,
            target_graph_memory_usage=None,
            draft_graph_memory_usage=None,
        ),
    )
    accept = scheduler.avg_spec_accept_length()
    if accept is not None:
        state["avg_spec_accept_length"] = accept
    return dict(msgspec_to_builtins(state))


def main(argv: list[str] | None = None) -> int:
    """Parse SGLang's argv with SGLang's parser and serve until stopped."""
    argv = list(sys.argv[1:] if argv is None else argv)
    os.environ[ARGV_ENV] = json.dumps(argv)  # spawned children inherit it
    from sglang.srt.entrypoints.http_server import launch_server
    from sglang.srt.plugins import load_plugins
    from sglang.srt.server_args import prepare_server_args
    from sglang.srt.utils import kill_process_tree

    load_plugins()
    server_args = prepare_server_args(argv)
    try:
        launch_server(server_args, run_scheduler_process_func=run_scheduler_process)
    finally:
        kill_process_tree(os.getpid(), include_parent=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
