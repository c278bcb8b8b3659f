"""Plain records the bench passes around; nothing here knows about gRPC."""

import dataclasses
from typing import Optional


@dataclasses.dataclass(frozen=True)
class Prompt:
    """One prompt: raw text completed as is, chat messages rendered by the server's template, or
    token ids used as they are; with `json_schema` the reply is structured output (ends at EOS, not
    ignore_eos) and must parse."""

    name: str
    kind: str
    text: Optional[str] = None
    messages: Optional[tuple] = None  # tuple of (role, content)
    json_schema: Optional[str] = None  # JSON Schema text for structured_output
    ids: Optional[tuple] = None  # token ids

    def __post_init__(self):
        if sum(x is not None for x in (self.text, self.messages, self.ids)) != 1:
            raise ValueError(f"prompt '{self.name}': give exactly one of 'prompt' or 'messages'")


@dataclasses.dataclass(frozen=True)
class Sampling:
    """A sampling mode; greedy is temperature 0."""

    mode: str  # "greedy" or "sampled"
    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0


GREEDY = Sampling("greedy")


def sampled(temperature: float) -> Sampling:
    """The issue's sampled mode: top-k 20, top-p 0.95 at the given temperature."""
    return Sampling("sampled", temperature=temperature, top_k=20, top_p=0.95)


@dataclasses.dataclass(frozen=True)
class GenRequest:
    """One Generate call as the bench issues it."""

    prompt: Prompt
    sampling: Sampling
    max_tokens: int
    seed: int
    draft: bool = True
    variant: Optional[str] = None  # None: the server's default head variant
    ignore_eos: bool = True  # False for structured output, which the grammar ends with EOS
    context_copy: Optional[bool] = None  # None: the server's default (context-copy drafts on)


@dataclasses.dataclass
class GenResult:
    """What one Generate call returned, with client-side timestamps (seconds, time.perf_counter)."""

    ok: bool
    error: str = ""
    t_send: float = 0.0
    t_end: float = 0.0
    # (receive time, number of token ids in that streamed message) for each message carrying ids.
    chunks: list = dataclasses.field(default_factory=list)
    token_sha256: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    drafted: int = 0
    accepted: int = 0
    rounds: int = 0
    seed: int = 0
    variant: str = ""
    finish_reason: str = ""
    round_tokens: list = dataclasses.field(default_factory=list)  # ids each verify round emitted
    draft_degraded: bool = False  # the server says its drafter failed or was late in some round
    cached_prompt_tokens: int = 0  # prompt tokens the server resumed from its prefix cache
    copy_drafted: int = 0  # of `drafted`, the context-copy drafts
    copy_accepted: int = 0  # of `accepted`, the context-copy drafts
    server: dict = dataclasses.field(default_factory=dict)  # the server's own timings, as reported


@dataclasses.dataclass(frozen=True)
class CellKey:
    """A cell: one prompt, one sampling mode, one concurrency level, one head variant."""

    prompt: str
    mode: str
    level: int
    variant: str  # "" for the server's default
    context_copy: bool = True  # False: the cell's requests turn context-copy drafts off

    def label(self) -> str:
        base = f"{self.prompt}/{self.mode}/c{self.level}"
        base = f"{base}/{self.variant}" if self.variant else base
        return base if self.context_copy else f"{base}/nocopy"
