"""FakeBackendForBenchTests: an in-process test double of a Twinspan server for the bench's own logic.

It is not a model: ids come from a hash of (prompt, sampling, seed), streamed in rounds of 1..4 ids.
Switches plant the faults the bench must catch.
"""

import hashlib
import struct
import threading
import time

from twinspan_bench.model import GenResult


def fake_ids(req, salt: str = "") -> list:
    seed = "greedy" if req.sampling.mode == "greedy" else str(req.seed)
    key = f"{req.prompt.name}|{req.sampling.mode}|{seed}|{salt}".encode()
    return [int.from_bytes(hashlib.sha256(key + struct.pack("<I", i)).digest()[:2], "little")
            for i in range(req.max_tokens)]


def sha(ids) -> str:
    return hashlib.sha256(struct.pack(f"<{len(ids)}I", *ids)).hexdigest()


class FakeBackendForBenchTests:
    """Thread-safe fake; set `concurrency_bug`, `draft_bug`, `repeat_bug` or `fail_seeds` to plant
    faults."""

    def __init__(self, delay_s: float = 0.002):
        self.delay_s = delay_s
        self.concurrency_bug = False  # replies change while another request is in flight
        self.draft_bug = False  # drafted replies differ from draft: false
        self.repeat_bug = False  # every call differs from the one before
        self.fail_seeds = set()
        self.drafter_after = 0  # ModelInfo says drafter_connected from this many calls on
        self.prefix_block = 16  # a prompt of ids resumes after blocks of this many ids seen before
        self.seen_blocks = set()
        self.lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0
        self.calls = []

    def model_info(self, timeout_s):
        self.model_info_calls = getattr(self, "model_info_calls", 0) + 1
        connected = self.model_info_calls > self.drafter_after
        return {"model_name": "fake", "max_context": 4096, "drafter_connected": connected}

    def prompt_tokens(self, prompt):
        if prompt.ids is not None:
            return len(prompt.ids)
        text = prompt.text if prompt.text is not None else repr(prompt.messages)
        return len(text) // 4

    def tokenize(self, prompt):
        return [ord(c) % 251 for c in prompt.text]

    def resume(self, ids) -> int:
        """Ids of whole blocks seen before (a prefix cache); remembers this prompt's blocks."""
        b = self.prefix_block
        with self.lock:
            cached = 0
            while cached + b < len(ids) and tuple(ids[:cached + b]) in self.seen_blocks:
                cached += b
            for end in range(b, len(ids) + 1, b):
                self.seen_blocks.add(tuple(ids[:end]))
        return cached

    def generate(self, req) -> GenResult:
        with self.lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self.calls.append(req)
            call_number = len(self.calls)
        try:
            result = GenResult(ok=True, seed=req.seed, t_send=time.perf_counter())
            time.sleep(self.delay_s * 5)  # everyone is in flight before anyone decides its ids
            if req.prompt.ids is not None:  # prefill time: the ids not resumed from the cache
                result.cached_prompt_tokens = self.resume(req.prompt.ids)
                time.sleep(self.delay_s * (len(req.prompt.ids) - result.cached_prompt_tokens) / 8)
            if req.seed in self.fail_seeds:
                result.ok, result.error = False, "UNAVAILABLE: planted failure"
                result.t_end = time.perf_counter()
                return result
            salt = ""
            if self.concurrency_bug and self.in_flight > 1:
                salt += "crowd"
            if self.draft_bug and req.draft:
                salt += "draft"
            if self.repeat_bug:
                salt += str(call_number)
            ids = fake_ids(req, salt)
            # Prefill emits one id, then rounds of 3, 1, 2, 4, ... ids (cut at max_tokens).
            sizes, left, pattern = [1], len(ids) - 1, (3, 1, 2, 4) if req.draft else (1,)
            while left > 0:
                n = min(pattern[(len(sizes) - 1) % len(pattern)], left)
                sizes.append(n)
                left -= n
            for n in sizes:
                time.sleep(self.delay_s)
                result.chunks.append((time.perf_counter(), n))
            result.round_tokens = sizes[1:]
            result.rounds = len(sizes) - 1
            result.accepted = sum(sizes[1:]) - result.rounds
            result.drafted = 3 * result.rounds if req.draft else 0
            if req.context_copy is not False and req.draft:  # the first round's drafts are copies
                result.copy_drafted, result.copy_accepted = 3, min(2, result.accepted)
            result.completion_tokens = len(ids)
            result.prompt_tokens = 7
            result.token_sha256 = sha(ids)
            result.variant = req.variant or ("two-span" if req.draft else "none")
            result.finish_reason = "FINISH_REASON_LENGTH"
            result.t_end = time.perf_counter()
            return result
        finally:
            with self.lock:
                self.in_flight -= 1
