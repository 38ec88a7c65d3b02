"""The pure declarations that flow between the pipeline's stages.

Every stage (recipe, lock, hub, image, launch, topology, bench, report, run) imports its types
from here; nothing here imports a stage. Modules:

- `patterns`: the shared name patterns (recipe names, Hub repos, digests, ...) and their
  human wording for error messages;
- `recipe`: the recipe and its parts;
- `image`: the image spec (base image, patch set, what a patch set provides);
- `catalog`: SGLang's server-option catalog;
- `dataset`: references to prompt sources (bench datasets, Hub datasets);
- `lock`: the lock with typed sections, and `Locked` (a recipe with its lock);
- `record`: the run record that bench/accept/run write and report/compare read;
- `server`: the server's limits and `/metrics` during a bench level (part of the record).
"""
