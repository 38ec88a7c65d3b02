"""A local Hugging Face Hub-compatible HTTP server for tests and benchmarks.

It serves exactly what `HfApi.model_info`, `HfApi.list_repo_tree` and `snapshot_download` /
`hf_hub_download` (huggingface_hub 2.x) call, with the headers they read:

- `GET /api/models/{repo}[/revision/{rev}]` (`?blobs=true` adds sizes and LFS sha256),
- `GET /api/models/{repo}/tree/{rev}[/{path}]?recursive=...`,
- the same for dataset repositories (`HubServer.add_dataset`) under `/api/datasets/...`, with
  files at `/datasets/{repo}/resolve/{rev}/{path}` (what `HfApi.dataset_info` and
  `hf_hub_download(repo_type="dataset")` call),
- `HEAD|GET /{repo}/resolve/{rev}/{path}`: small files answer directly (`ETag` = git blob id,
  `X-Repo-Commit`, `Content-Length`); LFS files answer 302 to a "CDN" on another origin
  (127.0.0.2) with `X-Linked-Etag` (sha256), `X-Linked-Size` and `X-Repo-Commit`, like the Hub,
- `GET /cdn/{sha256}` on the CDN origin, with `Range` support.

Errors carry the Hub's `X-Error-Code` / `X-Error-Message` headers (RepoNotFound,
RevisionNotFound, EntryNotFound, GatedRepo: 401 without a token, 403 with a token that is
not on the repo's authorized list). Faults for tests: drop the connection after N bytes of a
file, serve a corrupted byte, and a request log to assert on.
"""

from hubserver.repos import HubFile, HubRepo
from hubserver.server import HubServer, Request

__all__ = ["HubFile", "HubRepo", "HubServer", "Request"]
