"""The conversations a multi-turn bench level sends, and the messages of each turn.

From a dataset with dialogues (ShareGPT's `conversations`, OpenAI-style `messages`, a list of
user turns such as mt_bench_prompts' `prompt`): each dialogue of at least two user turns
gives a conversation of its own user turns, up to `turns`, in file order, cycled. From any
other dataset (random, chat, a prompt column): synthetic conversations, each a system prompt
of `input_len` random words shared by every conversation of the run (the same words at every
level: the prefix a deployment's system prompt gives), then `turns` user turns, the dataset's
prompts in order (random: SYNTHETIC_TURN_WORDS random words each).

Each conversation's first user turn starts with a tag of its own (as bench_prompts tags
single prompts), so two levels never send the same conversation: what a warm cache holds
for a level is the shared system prompt and what its own turns left.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from repro.bench.prompts.datasets import PromptSet
from repro.bench.prompts.sets import random_words, take
from repro.errors import ReproError

SYNTHETIC_TURN_WORDS = 32
SYSTEM_PROMPT_SEED = 20_260_101  # one system prompt for every level of every run

Message = dict[str, str]


@dataclass(frozen=True)
class Conversation:
    """A system prompt (or none) and the user turns sent one after the other."""

    system: str | None
    user_turns: list[str]

    def messages(self, answers: list[str]) -> list[Message]:
        """The next turn's messages: the system prompt, each earlier user turn with the
        server's answer to it (`answers`, in order), then the next user turn."""
        turn = len(answers)
        out = [{"role": "system", "content": self.system}] if self.system else []
        for user, answer in zip(self.user_turns[:turn], answers, strict=True):
            out += [{"role": "user", "content": user}, {"role": "assistant", "content": answer}]
        out.append({"role": "user", "content": self.user_turns[turn]})
        return out


def shared_system_prompt(input_len: int) -> str:
    return random_words(random.Random(SYSTEM_PROMPT_SEED), input_len)


def bench_conversations(
    source: PromptSet | None, count: int, turns: int, input_len: int, *, seed: int = 0
) -> list[Conversation]:
    """`count` conversations of at most `turns` user turns (the rules in the docstring)."""
    rng = random.Random(seed)

    def tagged(text: str) -> str:
        return f"[{rng.randrange(10**9)}] {text}"

    if source is not None and source.dialogues:
        dialogues = [d for d in source.dialogues if len(d) >= 2]
        if not dialogues:
            raise ReproError(
                f"dataset {source.name}: no conversation has two or more user turns",
                hint="give a dataset of multi-turn dialogues, or a prompt set for synthetic "
                "conversations",
            )
        return [Conversation(None, [tagged(d[0]), *d[1:turns]]) for d in take(dialogues, count)]
    system = shared_system_prompt(input_len)
    if source is None:
        texts = [random_words(rng, SYNTHETIC_TURN_WORDS) for _ in range(count * turns)]
    else:
        texts = take(source.prompts, count * turns)
    return [
        Conversation(system, [tagged(texts[i * turns]), *texts[i * turns + 1 : (i + 1) * turns]])
        for i in range(count)
    ]
