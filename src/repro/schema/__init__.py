"""The pure declarations that flow between the pipeline's stages.

Every stage (recipe, lock, hub, image, launch, topology, bench, report, run) imports its types
from here; nothing here imports a stage. Modules:

- `base`: the shared name patterns (recipe names, Hub repos, digests, ...) with their wording
  for error messages, the strict base model, a 95% interval;
- `recipe`, `deployment`: the recipe and its parts;
- `image`: the image spec (base image, patch set, what a patch set provides);
- `catalog`: SGLang's server-option catalog;
- `dataset`: references to prompt sources (bench datasets, Hub datasets);
- `lock`: the lock with typed sections, and `Locked` (a recipe with its lock);
- `record`: the run record that bench/accept/run write and report/compare read, with its
  parts `level` (summary.json's levels, the per-request rows), `server` (limits, `/metrics`
  and energy during a level), `accept` (accept.json), `machine` (machine.json,
  server_info.json, the interconnect probe) and `client` (the client's limits on a request);
- `runcontext`: `context.json` of a `repro run` folder.
"""
