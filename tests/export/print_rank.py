"""Stands in for `python3 -m sglang.launch_server` in the Slurm test job: prints, as one JSON
line, the argv it received and the Slurm task variables of its own environment."""

import json
import os
import sys

keys = ("SLURM_NODEID", "SLURM_PROCID", "SLURMD_NODENAME", "SLURM_JOB_ID")
task = {k: os.environ.get(k) for k in keys}
print("RANK-REPORT " + json.dumps({"argv": sys.argv[1:], "task": task}), flush=True)
