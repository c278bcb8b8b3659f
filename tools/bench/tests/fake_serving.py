"""FakeServingForBenchTests: an in-process test double of the public twinspan.v1.Serving API.

It exists to test the bench's gRPC client, not a model: ids come from a hash of the request, streamed
one Chunk per "round" (the prefill's id, then rounds of 3, 1, 2, 4 ids), then one Final. Switches
plant faults the bench must report.
"""

import concurrent.futures
import hashlib
import struct
import threading
import time

import grpc

from twinspan_bench import stubs


def sha(ids) -> str:
    return hashlib.sha256(struct.pack(f"<{len(ids)}I", *ids)).hexdigest()


class FakeServingForBenchTests:
    """Starts on 127.0.0.1 with a free port; `address` says where. Stop with `stop()`."""

    def __init__(self, stubs_dir=None, round_delay_s=0.002):
        self.pb2, pb2_grpc = stubs.load(stubs_dir)
        self.round_delay_s = round_delay_s
        self.max_context = 4096  # Tokenize gives one id per character
        self.lie_about_hash = False
        self.stop_after = None  # ends with FINISH_REASON_EOS after this many ids
        self.fail_seeds = set()
        self.text_of = lambda start, n: "x" * n  # the text of a chunk of ids [start, start + n)
        self.requests = []
        self.lock = threading.Lock()
        servicer = type("Servicer", (pb2_grpc.ServingServicer,), {
            "Generate": lambda _, req, ctx: self.generate(req, ctx),
            "ModelInfo": lambda _, req, ctx: self.pb2.ModelInfoResponse(
                model_name="fake-for-bench-tests", max_context=self.max_context,
                head_variant="two-span"),
            "Tokenize": lambda _, req, ctx: self.pb2.TokenizeResponse(
                ids=range(len(req.text if req.WhichOneof("input") == "text" else repr(req.chat)))),
        })()
        self.server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=32))
        pb2_grpc.add_ServingServicer_to_server(servicer, self.server)
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.address = f"127.0.0.1:{self.port}"
        self.server.start()

    def stop(self):
        self.server.stop(grace=None)

    def generate(self, req, ctx):
        pb2 = self.pb2
        with self.lock:
            self.requests.append(req)
        s = req.sampling
        if s.seed.value in self.fail_seeds:
            ctx.abort(grpc.StatusCode.UNAVAILABLE, "planted failure")
        text = req.prompt if req.WhichOneof("input") == "prompt" else repr(req.chat)
        key = f"{text}|{s.temperature}|{s.seed.value if s.temperature > 0 else 0}".encode()
        count = s.max_tokens if self.stop_after is None else min(self.stop_after, s.max_tokens)
        ids = [int.from_bytes(hashlib.sha256(key + struct.pack("<I", i)).digest()[:2], "little")
               for i in range(count)]
        drafting = not s.HasField("draft") or s.draft.value
        pattern = (3, 1, 2, 4) if drafting else (1,)
        sizes, left = [1], count - 1
        while left > 0:
            sizes.append(min(pattern[(len(sizes) - 1) % len(pattern)], left))
            left -= sizes[-1]
        at = 0
        for round_number, n in enumerate(sizes):
            time.sleep(self.round_delay_s)
            yield pb2.GenerateResponse(chunk=pb2.GenerateChunk(
                ids=ids[at:at + n], round=round_number, text=self.text_of(at, n)))
            at += n
        rounds = len(sizes) - 1
        final = pb2.GenerateFinal(
            token_sha256=sha(ids[:-1] if self.lie_about_hash else ids), prompt_tokens=len(text),
            completion_tokens=count, drafted=3 * rounds if drafting else 0,
            accepted=(count - 1 - rounds) if drafting else 0, rounds=rounds, seed=s.seed.value,
            head_variant=(req.head_variant or "two-span") if drafting else "none",
            finish_reason=(pb2.FINISH_REASON_LENGTH if count == s.max_tokens
                           else pb2.FINISH_REASON_EOS),
            tokens_per_round=sizes[1:], served_by="fake")
        final.timings.total_seconds = 0.01
        yield pb2.GenerateResponse(final=final)
