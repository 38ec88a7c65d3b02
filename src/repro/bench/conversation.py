"""A multi-turn level: conversations sent turn after turn, each turn carrying the history.

At most `concurrency` conversations are in flight; within one, a turn is sent when the answer
to the one before has ended, and carries every earlier user turn with the server's answer to
it (the text it generated; on /generate the turns are rendered here with the model's chat
template, on chat the server renders them). A failed turn ends its conversation: the turns
not sent are recorded as failed (`not_sent`). Each request is timed as a single-turn level's
(repro.bench.client.stream), and its row names its conversation and turn.

What the level adds to its record (`ConversationLevel`): the cache state it started from and
the server's `cached_tokens` against `prompt_tokens`, in all and by turn.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from repro.bench.client.stream import LevelRun, RequestResult, StreamClient
from repro.bench.client.wire import chat_body, generate_body
from repro.bench.metrics import request_row
from repro.bench.prompts.chattemplate import ChatTemplate
from repro.bench.prompts.conversations import Conversation, Message, bench_conversations
from repro.bench.sweeprecord import BENCH_THINKING, SweepPlan
from repro.schema.conversation import CacheState, ConversationLevel, TurnStats
from repro.schema.level import Load, RequestRow
from repro.schema.record import Endpoint


@dataclass(frozen=True)
class TurnFormat:
    """How a turn's messages become a request body on the run's endpoint."""

    endpoint: Endpoint
    model: str
    output_len: int
    template: ChatTemplate | None
    thinking: bool

    def body(self, messages: list[Message]) -> bytes:
        if self.endpoint == "chat":
            kwargs = self.template.kwargs(self.thinking) if self.template else None
            return chat_body(self.model, messages, self.output_len, temperature=0.0,
                             ignore_eos=True, chat_template_kwargs=kwargs)  # fmt: skip
        if self.template is None:
            raise ValueError("a conversation on /generate needs the chat template")
        text = self.template.render_messages(messages, thinking=self.thinking)
        return generate_body(text, self.output_len, temperature=0.0, ignore_eos=True)


@dataclass
class ConversationRun:
    """One level's conversations and the cache state it starts from; `run` sends them, `rows`
    and `stats` describe the results (in the order the requests were sent), `where` names each
    result's (conversation, turn)."""

    conversations: list[Conversation]
    form: TurnFormat
    cache: CacheState
    where: list[tuple[int, int]] = field(default_factory=list)

    @property
    def requests(self) -> int:
        return sum(len(c.user_turns) for c in self.conversations)

    async def run(
        self,
        client: StreamClient,
        concurrency: int,
        *,
        repeat: int = 0,
        on_done: Callable[[RequestResult], None] | None = None,
    ) -> LevelRun:
        gate = asyncio.Semaphore(max(1, concurrency))
        results: list[RequestResult] = []
        self.where = []
        t0 = time.perf_counter()

        def new_result(conv: int, turn: int) -> RequestResult:
            result = RequestResult(concurrency, repeat, len(results), text="")
            results.append(result)
            self.where.append((conv, turn))
            return result

        async def talk(conv: int, conversation: Conversation) -> None:
            answers: list[str] = []
            async with gate:
                for turn in range(len(conversation.user_turns)):
                    result = new_result(conv, turn)
                    body = self.form.body(conversation.messages(answers))
                    await client.request(body, result, t0, self.form.output_len)
                    if on_done is not None:
                        on_done(result)
                    if not result.ok:
                        break
                    answers.append(result.text or "")
                for turn in range(len(answers) + 1, len(conversation.user_turns)):
                    skipped = new_result(conv, turn)
                    skipped.error_kind = "not_sent"
                    skipped.error = f"turn {len(answers)} of the conversation failed"

        await asyncio.gather(*(talk(i, c) for i, c in enumerate(self.conversations)))
        ends = [r.start_s + r.e2e_s for r in results if r.e2e_s is not None]
        duration = max(ends) if ends else time.perf_counter() - t0
        return LevelRun(results, duration, t0)

    def rows(self, results: list[RequestResult]) -> Iterator[RequestRow]:
        for result, (conv, turn) in zip(results, self.where, strict=True):
            row = request_row(result)
            row.conversation, row.turn = conv, turn
            yield row

    def stats(self, results: list[RequestResult]) -> ConversationLevel:
        ok = [(r, turn) for r, (_, turn) in zip(results, self.where, strict=True) if r.ok]
        by_turn = []
        for turn in sorted({t for _, t in ok}):
            done = [r for r, t in ok if t == turn]
            prompt = sum(r.prompt_tokens for r in done)
            cached = sum(r.cached_tokens for r in done)
            ttfts = [r.ttft_s for r in done if r.ttft_s is not None]
            by_turn.append(
                TurnStats(
                    turn=turn,
                    requests=len(done),
                    mean_prompt_tokens=prompt / len(done),
                    mean_cached_tokens=cached / len(done),
                    cache_hit_rate=cached / prompt if prompt else 0.0,
                    median_ttft_ms=float(np.median(ttfts)) * 1000 if ttfts else None,
                )
            )
        prompt = sum(r.prompt_tokens for r, _ in ok)
        cached = sum(r.cached_tokens for r, _ in ok)
        return ConversationLevel(
            cache=self.cache,
            conversations=len(self.conversations),
            turns=max((len(c.user_turns) for c in self.conversations), default=0),
            cached_tokens=cached,
            prompt_tokens=prompt,
            cache_hit_rate=cached / prompt if prompt else None,
            by_turn=by_turn,
        )


def conversation_run(plan: SweepPlan, load: Load, seed: int) -> ConversationRun | None:
    """The level's conversations when the plan asks for them (`bench.conversation`), else
    None (a single-turn level)."""
    bench = plan.bench
    spec = bench.conversation
    if spec is None:
        return None
    conversations = bench_conversations(
        plan.source, bench.level_prompts(load), spec.turns, bench.input_len, seed=seed
    )
    form = TurnFormat(plan.endpoint, plan.model, bench.output_len, plan.template, BENCH_THINKING)
    return ConversationRun(conversations, form, spec.cache)
