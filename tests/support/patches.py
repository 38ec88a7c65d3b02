"""Real unified diffs against the simulator image's SGLang source tree."""

from __future__ import annotations

import subprocess
from pathlib import Path

SPEC_INFO = Path("python/sglang/srt/speculative/spec_info.py")
SHIM_SPEC_INFO = Path("src/repro/sim/shim/sglang/srt/speculative/spec_info.py")


def spec_info_patch(repo_root: Path, workdir: Path, member: str = "DDTREE") -> bytes:
    """A diff that registers one more speculative algorithm, as SGLang PR #29907 does."""
    original = (repo_root / SHIM_SPEC_INFO).read_text()
    patched = original.replace("    NONE = auto()\n", f"    {member} = auto()\n    NONE = auto()\n")
    assert patched != original, "spec_info.py no longer ends its enum with NONE"
    for side, text in (("a", original), ("b", patched)):
        (workdir / side / SPEC_INFO).parent.mkdir(parents=True, exist_ok=True)
        (workdir / side / SPEC_INFO).write_text(text)
    diff = subprocess.run(
        ["git", "diff", "--no-index", "--no-prefix", "a", "b"],
        cwd=workdir,
        capture_output=True,
        text=True,
    ).stdout
    assert f"--- a/{SPEC_INFO}" in diff  # the directories a/ and b/ are the -p1 prefixes
    return diff.encode()
