"""Write the small Mooncake-format trace repro ships (src/repro/bench/prompts/data/
trace-demo.jsonl).

Deterministic (a fixed seed, no clock): running it again writes the same bytes, which
tests/bench/test_trace.py checks. 48 requests over about 12 s: bursts of 2-5 requests a few
ms apart between quiet gaps (what a gamma process of burstiness < 1 looks like), on four
"applications" whose requests share a one-block system prompt (hash id 0-3) and, for half of
them, a second shared block (a few-shot preamble, ids 10-13), then blocks of their own; input
lengths 600-1500 tokens, outputs 16-64 tokens (small enough for the CPU engine's tiny model,
context 4096).

    python scripts/make_demo_trace.py            # rewrite the shipped file
    python scripts/make_demo_trace.py --check    # exit 1 when the shipped file differs
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src/repro/bench/prompts/data/trace-demo.jsonl"
REQUESTS = 48
BLOCK = 512
SEED = 20261205


def trace_lines() -> list[str]:
    rng = random.Random(SEED)
    lines: list[str] = []
    now_ms = 0
    own_block = 100  # hash ids from here on belong to one request each
    while len(lines) < REQUESTS:
        now_ms += rng.randint(300, 800)  # a quiet gap, then a burst
        for _ in range(min(rng.randint(2, 5), REQUESTS - len(lines))):
            app = rng.randrange(4)
            input_length = rng.randint(600, 1500)
            blocks = [app] + ([10 + app] if app % 2 == 0 else [])
            while len(blocks) * BLOCK < input_length:
                blocks.append(own_block)
                own_block += 1
            lines.append(
                json.dumps(
                    {
                        "timestamp": now_ms,
                        "input_length": input_length,
                        "output_length": rng.randint(16, 64),
                        "hash_ids": blocks,
                    }
                )
            )
            now_ms += rng.randint(0, 30)
    return lines


def main() -> int:
    text = "\n".join(trace_lines()) + "\n"
    if "--check" in sys.argv[1:]:
        same = OUT.read_text() == text
        print(f"{OUT.name}: {'up to date' if same else 'differs: run without --check'}")
        return 0 if same else 1
    OUT.write_text(text)
    print(f"wrote {OUT} ({REQUESTS} requests)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
