"""The prefix-reuse cell: time to first token for a long prompt sent again with a new suffix
(resumed from the server's prompt-prefix cache) against prompts of the same length it has not seen
(fresh), side by side in one run, and proof that a resumed prompt completes as it did fresh."""

from . import exactness, stats
from .model import GREEDY, GenRequest, Prompt


def ttft_s(result):
    """Client-side time to the first streamed id, or None for a failed request."""
    return stats.request_metrics(result)["ttft_s"]


def run_prefix_cell(backend, source_ids, prefix_tokens: int, suffix_tokens: int, reps: int,
                    tokens: int, log=lambda s: None) -> dict:
    """`source_ids` must hold at least prefix_tokens + suffix_tokens * (reps + 2) + reps + 1 ids.

    Rep r sends the shared prefix (the first `prefix_tokens` ids) with suffix r, cached after the
    warm-up, and a fresh prompt of the same length that starts r + 1 ids later (no cached block
    matches it). The warm-up's prompt is sent once more at the end: that resumed run must give the
    warm-up's fresh tokens (the `repeat` check)."""
    need = prefix_tokens + suffix_tokens * (reps + 2) + reps + 1
    if len(source_ids) < need:
        raise ValueError(f"prefix cell: the source text has {len(source_ids)} tokens, "
                         f"{need} are needed")
    tail = source_ids[prefix_tokens + reps + 1:]

    def suffix(i):
        return tuple(tail[i * suffix_tokens:(i + 1) * suffix_tokens])

    def request(name, ids):
        return GenRequest(prompt=Prompt(name, "code", ids=tuple(ids)), sampling=GREEDY,
                          max_tokens=tokens, seed=0, draft=True)

    shared = tuple(source_ids[:prefix_tokens])
    warm = request("prefix-warm", shared + suffix(0))
    first = backend.generate(warm)  # fresh: caches the shared prefix
    fresh, resumed = [], []
    for r in range(reps):
        shifted = tuple(source_ids[r + 1:r + 1 + prefix_tokens])
        fresh.append(backend.generate(request(f"prefix-fresh-{r}", shifted + suffix(r + 1))))
        resumed.append(backend.generate(request(f"prefix-resumed-{r}", shared + suffix(r + 1))))
    again = backend.generate(warm)
    ledger = exactness.Ledger()
    ledger.compare("repeat", again, first, stream=0, rep=1, seed=0)
    ok_resumed = [r for r in resumed if r.ok]
    t_fresh = stats.median(ttft_s(r) for r in fresh)
    t_resumed = stats.median(ttft_s(r) for r in resumed)
    record = {
        "cell": "prefix/greedy/c1", "prompt": "prefix", "kind": "prefix", "mode": "greedy",
        "level": 1, "variant": "", "reps": reps, "tokens": tokens,
        "prefix_tokens": prefix_tokens, "suffix_tokens": suffix_tokens,
        "requests": 2 + 2 * reps,
        "failed": sum(1 for r in [first, again, *fresh, *resumed] if not r.ok),
        "ttft_fresh_s": t_fresh, "ttft_resumed_s": t_resumed,
        "ttft_speedup": t_fresh / t_resumed if t_fresh and t_resumed else None,
        "server_ttft_fresh_s": stats.median(stats.server_timing(r, "first_token_seconds")
                                            for r in fresh if r.ok),
        "server_ttft_resumed_s": stats.median(stats.server_timing(r, "first_token_seconds")
                                              for r in ok_resumed),
        "cached_prompt_tokens": stats.median(r.cached_prompt_tokens for r in ok_resumed),
        "fresh_cached_prompt_tokens": stats.median(r.cached_prompt_tokens for r in fresh if r.ok),
        "exact": ledger.as_dict(),
    }
    log(f"prefix: TTFT fresh {t_fresh}, resumed {t_resumed} "
        f"({record['cached_prompt_tokens']} prompt tokens resumed)")
    return {"record": record, "evidence": [], "findings": ledger.findings}


PREFIX_HEADER = ("cell", "prompt tokens", "TTFT fresh ms", "TTFT resumed ms", "speedup",
                 "server fresh ms", "server resumed ms", "resumed tokens", "repeat =/≠/✗")


def prefix_row(r: dict, fmt, fmt_tally) -> tuple:
    return (r["cell"], str(r["prefix_tokens"] + r["suffix_tokens"]),
            fmt(r["ttft_fresh_s"], 1, 1e3), fmt(r["ttft_resumed_s"], 1, 1e3),
            fmt(r["ttft_speedup"], 1), fmt(r["server_ttft_fresh_s"], 1, 1e3),
            fmt(r["server_ttft_resumed_s"], 1, 1e3), fmt(r["cached_prompt_tokens"], 0),
            fmt_tally(r["exact"]["repeat"]))
