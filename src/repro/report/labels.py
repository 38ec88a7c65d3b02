"""Row labels that tell runs apart: the recipe name, then only as much as it takes to make
each label unique (start time, then machine or simulator profile, then the run folder).

Two runs of one recipe read `kimi26-ep4-dflash 12-03 07:53` and `kimi26-ep4-dflash 12-03
08:10`; a recipe measured on two machines at once adds the machine. Never two identical rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from repro.schema.forced import ForcedAcceptance


class _Started(Protocol):
    @property
    def started_at(self) -> str | None: ...


class Labelled(Protocol):
    """What a label is made of (a loaded run, `repro.report.records.LoadedRun`)."""

    @property
    def run(self) -> _Started: ...

    @property
    def path(self) -> Path: ...

    @property
    def recipe_name(self) -> str: ...

    @property
    def machine_class(self) -> str: ...

    @property
    def run_name(self) -> str: ...

    @property
    def forced(self) -> ForcedAcceptance | None: ...


LABEL_MAX = 60  # characters of a label in a table, a legend or a page


def shortened(text: str, limit: int = LABEL_MAX) -> str:
    """`text` on one line and at most `limit` characters, its middle elided when longer (a
    record's name is whatever its file says; a label of a million characters would take
    matplotlib minutes to lay out)."""
    flat = " ".join(str(text).split())
    if len(flat) <= limit:
        return flat
    keep = limit - 1
    return flat[: keep - keep // 3] + "…" + flat[len(flat) - keep // 3 :]


def run_title(run: Labelled) -> str:
    """The recipe name, with `(forced 4)` when the run's acceptance was forced, so that no
    table, plot or page shows forced acceptance unlabelled beside a measured one."""
    forced = run.forced
    return run.recipe_name + (f" ({forced.label()})" if forced is not None else "")


def short_time(started_at: str | None) -> str:
    """`2026-12-03T07:53:12Z` -> `12-03 07:53:12`; `?` when unknown."""
    if not started_at or "T" not in started_at:
        return "?"
    day, _, clock = started_at.partition("T")
    return f"{day[5:]} {clock[:8].rstrip('Z')}"


def _by_time(run: Labelled) -> str:
    return short_time(run.run.started_at)


def _by_machine(run: Labelled) -> str:
    return run.machine_class


def _by_folder(run: Labelled) -> str:
    return run.run_name


_DISAMBIGUATORS: tuple[Callable[[Labelled], str], ...] = (_by_time, _by_machine, _by_folder)


def unique_labels(runs: Sequence[Labelled]) -> list[str]:
    """One label per run, different for different folders (a folder given twice, e.g. as a
    run and as the baseline, keeps one label); a part is added only where labels clash."""
    labels = [shortened(run_title(run)) for run in runs]
    folders = [run.path.resolve() for run in runs]
    for part in (*_DISAMBIGUATORS, None):
        owners: dict[str, set[Path]] = {}
        for label, folder in zip(labels, folders, strict=True):
            owners.setdefault(label, set()).add(folder)
        clashing = {label for label, found in owners.items() if len(found) > 1}
        if not clashing:
            return labels
        if part is None:  # two folders alike in everything: number them
            return [
                f"{label} #{sorted(owners[label]).index(folder) + 1}"
                if label in clashing
                else label
                for label, folder in zip(labels, folders, strict=True)
            ]
        values = [shortened(part(run), LABEL_MAX // 2) for run in runs]
        telling = {  # clashing labels this part tells apart (parts alike in a group add nothing)
            label
            for label in clashing
            if len({v for v, x in zip(values, labels, strict=True) if x == label}) > 1
        }
        labels = [
            f"{label} {value}" if label in telling else label
            for label, value in zip(labels, values, strict=True)
        ]
    return labels


def distinct_pair(a: str, b: str, room: int) -> tuple[str, str]:
    """`a` and `b` in at most `room` characters each, still told apart: the part they share
    at the start becomes `…` (cut at a `-` or space), then each keeps its tail."""
    if len(a) <= room and len(b) <= room:
        return a, b
    common = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        common += 1
    cut = max(a.rfind("-", 0, common), a.rfind(" ", 0, common))
    if cut > 0 and a != b:
        a, b = "…" + a[cut:], "…" + b[cut:]

    def middle(s: str) -> str:  # the start, where they differ, and the end both stay
        if len(s) <= room:
            return s
        head = (room - 1) // 2
        return s[:head] + "…" + s[len(s) - (room - 1 - head) :]

    return middle(a), middle(b)
