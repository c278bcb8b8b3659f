"""Runs the cells: warm-up, repetitions of N streams started together, references and exactness checks.

A backend is any object with `generate(GenRequest) -> GenResult` that is safe to call from several
threads at once and never raises for a failed request (it returns GenResult(ok=False, error=...)).
"""

import dataclasses
import threading
from typing import Callable, Optional

from . import exactness, stats
from .model import CellKey, GenRequest, GenResult


@dataclasses.dataclass
class RunOptions:
    """What to run, besides the cells themselves."""

    tokens: int = 128
    reps: int = 3
    warmup: int = 1  # warm-up rounds per cell, results discarded
    warmup_tokens: int = 8
    alone: bool = False  # compare every concurrent reply with its solo run
    serial: bool = False  # compare every solo run with draft: false
    base_seed: int = 1234  # stream i uses base_seed + i
    draft: bool = True  # False: the cells themselves run draft: false (the plain baseline)
    # Context-copy settings to run each cell with: None leaves the server's default (on); True and
    # False ask for it explicitly, so (True, False) measures with and without side by side.
    context_copy: tuple = (None,)


def run_together(backend, requests) -> list:
    """Runs the requests on one thread each, released together by a barrier; results in order."""
    results = [None] * len(requests)
    barrier = threading.Barrier(len(requests))

    def worker(i):
        try:
            barrier.wait()
            results[i] = backend.generate(requests[i])
        except Exception as e:  # a backend bug must show as a failed request, not a hang
            results[i] = GenResult(ok=False, error=f"bench: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(len(requests))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def evidence(key: CellKey, rep: int, stream: int, request: GenRequest, result: GenResult) -> dict:
    """One request's record for the full report."""
    m = stats.request_metrics(result)
    return {
        "cell": key.label(), "rep": rep, "stream": stream, "seed": request.seed,
        "draft": request.draft, "ok": result.ok, "error": result.error,
        "token_sha256": result.token_sha256, "prompt_tokens": result.prompt_tokens,
        "cached_prompt_tokens": result.cached_prompt_tokens,
        "copy_drafted": result.copy_drafted, "copy_accepted": result.copy_accepted,
        "completion_tokens": result.completion_tokens, "drafted": result.drafted,
        "accepted": result.accepted, "rounds": result.rounds, "variant": result.variant,
        "finish_reason": result.finish_reason, "round_tokens": result.round_tokens,
        "draft_degraded": result.draft_degraded, "ttft_s": m["ttft_s"],
        "decode_tok_s": m["decode_tok_s"], "e2e_s": m["e2e_s"],
        "message_times_s": [round(t - result.t_send, 6) for t, _ in result.chunks],
        "message_ids": [n for _, n in result.chunks], "server": result.server,
    }


class Runner:
    """Runs every cell of one prompt and sampling mode, for each variant and level."""

    def __init__(self, backend, options: RunOptions, log: Callable[[str], None] = lambda s: None):
        self.backend = backend
        self.options = options
        self.log = log
        self.references = []  # records of the solo and draft:false runs

    def request(self, prompt, sampling, seed, variant, draft=None, tokens=None,
                context_copy=None) -> GenRequest:
        """A request; `draft` None means the cells' setting (RunOptions.draft); `context_copy`
        None, the server's default."""
        return GenRequest(prompt=prompt, sampling=sampling,
                          max_tokens=tokens or self.options.tokens, seed=seed,
                          draft=self.options.draft if draft is None else draft,
                          variant=variant or None, ignore_eos=prompt.json_schema is None,
                          context_copy=context_copy)

    def reference_runs(self, prompt, sampling, variant: Optional[str], draft: bool, seeds) -> dict:
        """Each seed run alone, one after another; returns {seed: GenResult}."""
        runs = {}
        for seed in seeds:
            req = self.request(prompt, sampling, seed, variant, draft=draft)
            result = self.backend.generate(req)
            runs[seed] = result
            self.references.append({
                "prompt": prompt.name, "mode": sampling.mode, "variant": variant or "",
                "draft": draft, "seed": seed, "ok": result.ok, "error": result.error,
                "token_sha256": result.token_sha256, "completion_tokens": result.completion_tokens,
                "reported_variant": result.variant,
            })
            if not result.ok:
                self.log(f"reference {prompt.name}/{sampling.mode} seed {seed} draft={draft} "
                         f"failed: {result.error}")
        return runs

    def run_cell(self, key: CellKey, prompt, sampling, solo: dict, plain: dict,
                 context_copy=None) -> dict:
        """Warm-up, then `reps` rounds of `key.level` streams; returns the cell's record."""
        opts = self.options
        seeds = [opts.base_seed + i for i in range(key.level)]
        for _ in range(opts.warmup):
            run_together(self.backend, [self.request(prompt, sampling, s, key.variant,
                                                     tokens=opts.warmup_tokens,
                                                     context_copy=context_copy) for s in seeds])
        requests = [self.request(prompt, sampling, s, key.variant, context_copy=context_copy)
                    for s in seeds]
        reps = [run_together(self.backend, requests) for _ in range(opts.reps)]

        ledger = exactness.Ledger()
        for stream, seed in enumerate(seeds):
            first = reps[0][stream]
            for rep in range(1, len(reps)):
                ledger.compare("repeat", reps[rep][stream], first, stream=stream, rep=rep, seed=seed)
            if opts.alone and key.level > 1:
                for rep, results in enumerate(reps):
                    ledger.compare("alone", results[stream], solo.get(seed), stream=stream, rep=rep,
                                   seed=seed)
            if opts.serial:
                ledger.compare("serial", solo.get(seed), plain.get(seed), stream=stream, seed=seed)

        summary = stats.cell_summary(reps)
        seen = sorted({r.variant for rep in reps for r in rep if r.ok and r.variant})
        record = {
            "cell": key.label(), "prompt": key.prompt, "kind": prompt.kind, "mode": key.mode,
            "level": key.level, "variant": key.variant, "variants_seen": seen,
            "context_copy": key.context_copy,
            "draft": opts.draft, "tokens": opts.tokens, "reps": opts.reps, **summary, "exact": ledger.as_dict(),
        }
        evid = [evidence(key, rep, stream, requests[stream], r)
                for rep, results in enumerate(reps) for stream, r in enumerate(results)]
        return {"record": record, "evidence": evid, "findings": ledger.findings}

    def run(self, prompt, sampling, levels, variants, on_cell: Callable[[dict], None]) -> None:
        """All cells of one prompt and mode: variants x levels; `on_cell` gets each cell's result."""
        seeds = [self.options.base_seed + i for i in range(max(levels))]
        plain = {}
        if self.options.serial:
            plain = self.reference_runs(prompt, sampling, None, False, seeds)
        for variant in variants:
            solo = {}
            if self.options.alone or self.options.serial:
                solo = self.reference_runs(prompt, sampling, variant, True, seeds)
            for level in levels:
                for copy in self.options.context_copy:
                    key = CellKey(prompt.name, sampling.mode, level, variant or "", copy is not False)
                    self.log(f"cell {key.label()}")
                    on_cell(self.run_cell(key, prompt, sampling, solo, plain, copy))
