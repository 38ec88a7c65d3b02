"""The push line a user watches, from what `docker push` draws on a terminal."""

from __future__ import annotations

from repro.image.push_progress import PushTally

# docker/cli redraws each layer's line in place (cursor up, erase line).
DRAWN = [
    "The push refers to repository [127.0.0.1:5000/team/sim]",
    "5f70bf18a086: Preparing",
    "\x1b[1A\x1b[2K9c1b6dd6c1e6: Pushing [====>        ]  12.3MB/45.6MB\x1b[1B",
    "5f70bf18a086: Layer already exists",
    "\x1b[2A\x1b[2K9c1b6dd6c1e6: Pushing [==========>  ]  40MB/45.6MB",
    "9c1b6dd6c1e6: Pushed",
]


def test_the_tally_counts_layers_done_and_bytes_sent() -> None:
    tally = PushTally()
    lines = [tally.line() for text in DRAWN if tally.feed(text)]
    assert lines[0] == "0/1 layers done"
    assert lines[1] == "0/2 layers done, 11.7 MiB of 43.5 MiB sent"
    assert lines[-2] == "1/2 layers done, 38.1 MiB of 43.5 MiB sent"
    assert lines[-1] == "2/2 layers done, 43.5 MiB of 43.5 MiB sent"
