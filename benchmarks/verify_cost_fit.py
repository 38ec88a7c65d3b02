"""How well does a verify-step cost fitted from a forced-acceptance sweep predict a level it
was not fitted to (issue 44)?

Reads the bench records of a sweep (records of `scripts/gpu-engine device DIR OUT TWIN...`:
SGLANG_SIMULATE_ACC_LEN forced to several lengths, per drafter block size, at several
concurrencies, plus the same levels without a drafter), fits the step cost
(repro.report.verifyfit), prints the coefficients, then for each level the output tok/s it
measured and what a fit on all the other levels predicts, and the error. With --profile-out
it writes the fit as a simulator profile labelled calibrated, naming its records. Levels whose
own records show a pause or a queue are named and left out of the fit; where the same level
was measured in two record folders (two launches), their spread is printed: no fit can come
closer to both than that.

    .venv/bin/python benchmarks/verify_cost_fit.py RECORD_OR_FOLDER... \
        [--profile-out PROFILE.json] [--name h200-qwen3-tiny]

Records made by the simulator are read on its unscaled clock; fitting them checks the code
against the profile that made them, and says nothing about any GPU.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from repro.report.records import load_runs
from repro.report.verifyfit import (
    calibrated_profile,
    fit,
    leave_one_out,
    loo_lines,
    points,
    record_folders,
    twin_lines,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("records", nargs="+", type=Path, help="record folders, or folders of them")
    parser.add_argument("--profile-out", type=Path, help="write the calibrated profile here")
    parser.add_argument("--name", default="fitted-verify-cost", help="the profile's name")
    args = parser.parse_args()
    runs = load_runs(record_folders(args.records))
    data = [p for run in runs for p in points(run)]
    result = fit(data)
    print(f"{len(data)} levels from {len(runs)} records")
    prefill = {
        "prefill_ms": result.prefill_ms,
        "prefill_wait_ms": result.prefill_wait_ms,
        "prefill_per_req_ms": result.prefill_per_req_ms,
    }
    for name, value in {**result.coefficients, **prefill}.items():
        print(f"  {name:<22} {value:10.4f}")
    held = leave_one_out(data)
    print("\n".join(loo_lines(held) + twin_lines(data)))
    if args.profile_out:
        profile = calibrated_profile(args.name, runs, data, result, held)
        args.profile_out.write_text(json.dumps(profile, indent=2) + "\n", encoding="utf-8")
        print(f"profile: {args.profile_out}")


if __name__ == "__main__":
    main()
