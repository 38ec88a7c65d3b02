"""Every exit code of `repro`, in one table: the errors take theirs from here, and
docs/comparing.md shows `markdown_table()` (tests/test_exitcodes.py keeps the two equal).

Each code means one thing, so a script can tell "fix the input" from "free disk space" from
"the server did not come up" without reading the message.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import IntEnum, unique


@unique  # one meaning per code: a second name for a value fails at import
class ExitCode(IntEnum):
    OK = 0
    USER_ERROR = 1
    USAGE = 2  # Click's own code for an unknown command or option
    NO_SPACE = 3
    DOCKER = 4
    LAUNCH = 5
    IMAGE_BUILD = 6
    REGISTRY = 7
    EXPORT = 8
    INCOMPLETE = 9
    FIRST_STAGE = 10  # `repro run`: 10 + the index of the stage that failed
    SIGNAL = 128  # stopped by a signal: 128 + its number, as a shell reports it


MEANING: dict[ExitCode, str] = {
    ExitCode.OK: "success",
    ExitCode.USER_ERROR: "a user-fixable error (bad recipe, bad input, a check that failed: "
    "`doctor`, `lock --check`, `recipe check`, `accept --check-lossless`, the accuracy gate of "
    "`accept --accuracy` and `compare`)",
    ExitCode.USAGE: "usage error: an unknown command, option or argument value (Click)",
    ExitCode.NO_SPACE: "not enough free disk space for a download (`fetch`, a Hub prompt dataset)",
    ExitCode.DOCKER: "Docker engine, Compose or buildx missing or not running",
    ExitCode.LAUNCH: "the server did not come up (`launch`)",
    ExitCode.IMAGE_BUILD: "the image build failed",
    ExitCode.REGISTRY: "a registry push or pull failed",
    ExitCode.EXPORT: "an export that cannot be written (`export k8s`, `export slurm`)",
    ExitCode.INCOMPLETE: "a result printed with a part missing (`campaign plan`: a point it "
    "could not predict, left out of the estimate, which covers the others)",
    ExitCode.FIRST_STAGE: "`repro run`: stage i failed",
    ExitCode.SIGNAL: "stopped by signal n (Ctrl-C: 130, SIGTERM: 143)",
}


def markdown_table(stages: Sequence[str]) -> str:
    """The table docs/comparing.md shows; `stages` in `repro run`'s order name the 10 + i row."""
    per_stage = ", ".join(f"{name} {ExitCode.FIRST_STAGE + i}" for i, name in enumerate(stages))
    rows = ["| code | meaning |", "|---|---|"]
    for code in ExitCode:
        shown = {ExitCode.FIRST_STAGE: "10 + i", ExitCode.SIGNAL: "128 + n"}.get(
            code, str(code.value)
        )
        meaning = MEANING[code]
        if code is ExitCode.FIRST_STAGE:
            meaning += f" ({per_stage})"
        rows.append(f"| {shown} | {meaning} |")
    return "\n".join(rows) + "\n"
