"""Per-request and per-cell statistics: decode speed, TTFT, tokens per round, gaps between rounds."""

import statistics


def median(values):
    """The median of the values that are not None, or None when there are none."""
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def request_metrics(result) -> dict:
    """Client-side numbers for one GenResult; a field is None when the reply cannot give it."""
    chunks = result.chunks
    metrics = {"ttft_s": None, "decode_tok_s": None, "round_gaps_s": [], "e2e_s": None}
    if not result.ok or not chunks:
        return metrics
    metrics["ttft_s"] = chunks[0][0] - result.t_send
    metrics["e2e_s"] = result.t_end - result.t_send
    # Decode speed leaves out the first message (prefill) and counts what came after it.
    after_first = sum(n for _, n in chunks[1:])
    span = chunks[-1][0] - chunks[0][0]
    if after_first > 0 and span > 0:
        metrics["decode_tok_s"] = after_first / span
    # Each streamed message after the first is one verify round, so their spacing is the round time.
    metrics["round_gaps_s"] = [b[0] - a[0] for a, b in zip(chunks, chunks[1:])]
    return metrics


def round_emitted(result) -> int:
    """Ids the verify rounds emitted (the prefill's token not counted): the server's per-round list,
    or accepted + one bonus per round when the list is absent."""
    return sum(result.round_tokens) if result.round_tokens else result.accepted + result.rounds


def tokens_per_round(emitted: int, rounds: int):
    """Mean ids a verify round commits, the bonus token included (the z-lab / vLLM mean acceptance
    length; equals 1 + accepted / rounds unless max_tokens cut the last round); None without rounds."""
    return emitted / rounds if rounds > 0 else None


def round_histogram(results) -> dict:
    """How many verify rounds emitted 1, 2, ... ids, over the results that carry the list."""
    hist = {}
    for r in results:
        for n in r.round_tokens:
            hist[n] = hist.get(n, 0) + 1
    return {str(n): hist[n] for n in sorted(hist)}


def aggregate_tok_s(results):
    """All streams' completion tokens over the wall time from the first send to the last reply."""
    ok = [r for r in results if r.ok]
    if not ok:
        return None
    span = max(r.t_end for r in ok) - min(r.t_send for r in ok)
    return sum(r.completion_tokens for r in ok) / span if span > 0 else None


def server_timing(result, name):
    """One of the server's reported timings (seconds), or None when it did not report it."""
    return result.server.get("timings", {}).get(name)


def cell_summary(reps) -> dict:
    """Summary of one cell from its repetitions (a list of lists of GenResult, one list per rep)."""
    per_request = [request_metrics(r) for rep in reps for r in rep]
    ok = [r for rep in reps for r in rep if r.ok]
    drafted = sum(r.drafted for r in ok)
    accepted = sum(r.accepted for r in ok)
    rounds = sum(r.rounds for r in ok)
    gaps = [g for m in per_request for g in m["round_gaps_s"]]
    return {
        "requests": sum(len(rep) for rep in reps),
        "failed": sum(1 for rep in reps for r in rep if not r.ok),
        "decode_tok_s": median(m["decode_tok_s"] for m in per_request),
        "decode_tok_s_min": min((m["decode_tok_s"] for m in per_request
                                 if m["decode_tok_s"] is not None), default=None),
        "aggregate_tok_s": median(aggregate_tok_s(rep) for rep in reps),
        "ttft_s": median(m["ttft_s"] for m in per_request),
        "tokens_per_round": tokens_per_round(sum(round_emitted(r) for r in ok), rounds),
        "round_tokens_hist": round_histogram(ok),
        "acceptance_rate": accepted / drafted if drafted > 0 else None,
        "drafted": drafted,
        "accepted": accepted,
        # Accepted tokens by draft source: the drafter's block and context copies.
        "copy_drafted": sum(r.copy_drafted for r in ok),
        "copy_accepted": sum(r.copy_accepted for r in ok),
        "drafter_accepted": accepted - sum(r.copy_accepted for r in ok),
        "cached_prompt_tokens": median(r.cached_prompt_tokens for r in ok),
        "rounds": rounds,
        "completion_tokens": sum(r.completion_tokens for r in ok),
        "prompt_tokens": median(r.prompt_tokens for r in ok),
        "round_gap_s": median(gaps),
        "draft_degraded": sum(1 for r in ok if r.draft_degraded),
        "server_ttft_s": median(server_timing(r, "first_token_seconds") for r in ok),
        "server_queue_s": median(server_timing(r, "queue_seconds") for r in ok),
    }
