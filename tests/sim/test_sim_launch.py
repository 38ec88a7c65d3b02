"""`python3 -m sglang.launch_server <argv>`: the command line, the registry, start-up and exit."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from repro.sim.server_argparser import DEFAULT_CATALOG, build_parser, load_catalog
from tests.support.simulator import Simulators

from .simproc import MODEL, PYTHON, SHIM, SRC, get_json, post_json, request

DFLASH = ["--speculative-draft-model-path", "z-lab/Qwen3-DFlash"]


def launch_all(runs: dict[str, tuple[list[str], dict[str, str]]]) -> dict[str, Any]:
    """Run several short-lived launches in parallel: name -> (returncode, stdout, stderr)."""
    procs = {}
    for name, (args, env) in runs.items():
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("REPRO_SIM_")}
        full_env.update({"PYTHONPATH": f"{SHIM}{os.pathsep}{SRC}", **env})
        procs[name] = subprocess.Popen(
            [PYTHON, "-m", "sglang.launch_server", "--model-path", MODEL, *args],
            env=full_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    results = {}
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=60)
        results[name] = (proc.returncode, out, err)
    return results


def test_refused_command_lines() -> None:
    dflash = ["--speculative-algorithm", "dflash", *DFLASH]
    results = launch_all(
        {
            "unknown_algorithm": (["--speculative-algorithm", "MEDUSA"], {}),
            "unknown_option": (["--no-such-flag"], {}),
            "ddtree": (["--speculative-algorithm", "DDTREE", *DFLASH], {}),
            "ddtree_budget": ([*dflash, "--speculative-ddtree-budget", "15"], {}),
            "no_draft": (["--speculative-algorithm", "DFLASH"], {}),
            "block_mismatch": (
                [
                    *dflash,
                    "--speculative-num-draft-tokens",
                    "8",
                    "--speculative-dflash-block-size",
                    "16",
                ],
                {},
            ),
            "profile": ([], {"REPRO_SIM_PROFILE": "no-such-profile"}),
        }
    )
    # argparse-style refusals: exit code 2, usage on stderr
    rc, _, err = results["unknown_algorithm"]
    assert rc == 2 and "usage: sglang serve" in err
    assert "error: argument --speculative-algorithm: invalid choice: 'MEDUSA'" in err
    rc, _, err = results["unknown_option"]
    assert rc == 2 and "unrecognized arguments: --no-such-flag" in err
    # DDTREE and its budget exist only once a patch registers them
    rc, _, err = results["ddtree"]
    assert rc == 2 and "invalid choice: 'DDTREE'" in err
    rc, _, err = results["ddtree_budget"]
    assert rc == 2 and "unrecognized arguments: --speculative-ddtree-budget 15" in err
    # start-up refusals SGLang raises as ValueError: exit code 1, a log line
    rc, out, _ = results["no_draft"]
    assert rc == 1 and "requires setting --speculative-draft-model-path" in out
    rc, out, _ = results["block_mismatch"]
    assert rc == 1 and "For DFLASH they must match" in out
    rc, out, _ = results["profile"]
    assert rc == 1 and "unknown simulator profile 'no-such-profile'" in out


def test_every_catalog_option_is_accepted() -> None:
    catalog = load_catalog()
    values = {"int": "1", "float": "0.5", "human_readable_int": "1k", "loads": "{}"}
    values.update(json_list_type="[]", parse_cuda_graph_config_arg="{}")
    argv: list[str] = []
    for flag in catalog["flags"]:
        kind, option = flag["kind"], flag["options"][0]
        if kind == "help":
            continue
        argv.append(option)
        if kind in ("storetrue", "booleanoptional", "deprecatedstoretrue"):
            continue
        if flag["choices"]:
            argv.append(str(flag["choices"][0]))
        else:
            argv.append(values.get(str(flag["type"]), "x"))
    args = build_parser(catalog).parse_args(argv)
    assert args.tp_size == 1 and args.max_total_tokens == 1000 and args.enable_metrics is True


def test_shim_dumps_the_catalog_it_parses(patched_shim: Path) -> None:
    """What repro's image manifest writer reads from an image: version, flag, options."""
    script = (
        "import argparse, json, sglang\n"
        "from sglang.srt.server_args import ServerArgs\n"
        "from sglang.srt.speculative.spec_info import SpeculativeAlgorithm\n"
        "p = argparse.ArgumentParser(); ServerArgs.add_cli_args(p)\n"
        "kind = lambda a: type(a).__name__.replace('Action', '').replace('_', '').lower()\n"
        "flags = [{'options': a.option_strings, 'kind': kind(a), 'dest': a.dest,\n"
        "  'type': getattr(a.type, '__name__', None) if a.type else None,\n"
        "  'choices': list(a.choices) if a.choices else None, 'default': a.default,\n"
        "  'nargs': a.nargs if a.nargs is not None else (0 if kind(a) in\n"
        "  ('storetrue', 'help') else None)} for a in p._actions]\n"
        "print(json.dumps({'version': sglang.__version__, 'simulated': sglang.REPRO_SIMULATED,\n"
        "  'algorithms': [m.name for m in SpeculativeAlgorithm], 'flags': flags}))\n"
    )
    env = {**os.environ, "PYTHONPATH": f"{SHIM}{os.pathsep}{SRC}"}
    plain = json.loads(subprocess.check_output([PYTHON, "-c", script], env=env))
    assert plain["version"] == "0.5.23" and plain["simulated"] is True
    catalog = json.loads(DEFAULT_CATALOG.read_text())
    assert plain["algorithms"] == catalog["builtin_speculative_algorithms"]
    assert plain["flags"] == [{k: f[k] for k in plain["flags"][0]} for f in catalog["flags"]]
    env["PYTHONPATH"] = f"{patched_shim}{os.pathsep}{SRC}"
    patched = json.loads(subprocess.check_output([PYTHON, "-c", script], env=env))
    assert "DDTREE" in patched["algorithms"]
    assert ["--speculative-ddtree-budget"] in [f["options"] for f in patched["flags"]]


def test_ddtree_with_the_patched_registry(simulator: Simulators, patched_shim: Path) -> None:
    args = ["--model-path", MODEL, "--speculative-algorithm", "DDTREE", *DFLASH]
    sim = simulator([*args, "--speculative-ddtree-budget", "32"], {}, shim=patched_shim)
    info = get_json(sim.url + "/server_info")
    assert "DDTREE" in info["sim_speculative_registry"]
    assert info["speculative_ddtree_budget"] == 32 and info["speculative_num_draft_tokens"] == 16
    body = {
        "text": ["Prove that the sum of two even numbers is even.", "Compute 17 * 23."],
        "sampling_params": {"max_new_tokens": 48, "ignore_eos": True},
    }
    _, outs = post_json(sim.url + "/generate", body)
    for out in outs:
        meta = out["meta_info"]
        assert meta["spec_num_proposed_drafts"] == meta["spec_verify_ct"] * 15
        assert len(meta["spec_correct_drafts_histogram"]) <= 16  # depth capped by the block


def test_a_stand_in_patch_makes_the_simulator_the_ddtree_images_sglang(
    simulator: Simulators, stand_in_shim: Path
) -> None:
    env = {"PYTHONPATH": f"{stand_in_shim}{os.pathsep}{SRC}"}
    # an option SGLang 0.5.23 added is unknown to 0.5.15, whose catalog it now parses with
    [(rc, _, err)] = launch_all({"newer": (["--attn-dp-size", "1"], env)}).values()
    assert rc == 2 and "unrecognized arguments: --attn-dp-size 1" in err
    args = ["--model-path", MODEL, "--speculative-algorithm", "DDTREE", *DFLASH]
    older = ["--cuda-graph-max-bs", "8", "--speculative-ddtree-budget", "64"]  # 0.5.15's own
    sim = simulator([*args, *older], {}, shim=stand_in_shim)
    info = get_json(sim.url + "/server_info")
    assert info["version"] == "0.5.15" and info["speculative_ddtree_budget"] == 64
    assert "DDTREE" in info["sim_speculative_registry"]
    assert "UNO" not in info["sim_speculative_registry"]  # an algorithm of 0.5.23, not 0.5.15


def test_load_delay_crash_and_sigterm(simulator: Simulators) -> None:
    args = ["--model-path", MODEL, "--api-key", "sekret"]
    slow = simulator(args, {"REPRO_SIM_LOAD_SECONDS": "2"}, wait=False)
    failing = simulator(
        ["--model-path", MODEL], {"REPRO_SIM_FAIL_AT_START": "CUDA out of memory"}, wait=False
    )
    crashing = simulator(
        ["--model-path", MODEL],
        {"REPRO_SIM_EXIT_AFTER_SECONDS": "2", "REPRO_SIM_EXIT_CODE": "3"},
        wait=False,
    )
    # weight loading: the port answers, health says 503, requests wait for the weights
    deadline = time.monotonic() + 30
    while "Load weight begin" not in slow.log() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert request(slow.url + "/health_generate")[0] == 503
    assert request(slow.url + "/health")[0] == 503  # health needs no API key
    body = {"text": "hi", "sampling_params": {"max_new_tokens": 2}}
    status, _, raw = request(slow.url + "/generate", body)
    assert (status, json.loads(raw)) == (401, {"error": "Unauthorized"})
    key = {"Authorization": "Bearer sekret"}
    status, _, raw = request(slow.url + "/generate", body, headers=key)
    assert status == 200 and json.loads(raw)["meta_info"]["completion_tokens"] <= 2
    slow.wait_ready()
    log = slow.log()
    assert log.index("Load weight end") < log.index("The server is fired up and ready to roll!")
    _, _, raw = request(slow.url + "/server_info", headers=key)
    info = json.loads(raw)
    assert info["api_key"] == "<redacted>" and "sekret" not in info["launch_command"]
    assert failing.wait_exit(30) == 1
    assert "Scheduler hit an exception: RuntimeError: CUDA out of memory" in failing.log()
    assert "fired up" not in failing.log()
    assert crashing.wait_exit(30) == 3
    assert "fired up" in crashing.log() and "simulated crash" in crashing.log()
    slow.proc.terminate()
    assert slow.wait_exit(30) == 0 and "Shutting down" in slow.log()
    assert "sekret" not in slow.log()
