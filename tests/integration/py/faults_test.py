"""Faults with real processes on 127.0.0.1: a drafter that sends malformed or stale proposals or
stalls, tap rows the drafter must refuse, a target killed and restarted under the router, many
cancelled requests that must leave nothing behind, a drain that runs out, and overload.

Run by ctest with TWINSPAN_{TARGET,DRAFTER,ROUTER,MAKE_DEMO}_BIN and TWINSPAN_PROTO_DIR set.
TWINSPAN_CANCEL_REQUESTS sets how many requests the cancellation test cancels (300 in CI; the
10,000 of docs/reliability.md come from the same test).
"""
import concurrent.futures
import json
import os
import random
import shutil
import signal
import struct
import sys
import threading
import time
import unittest
import urllib.request
from concurrent import futures

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import twinspan_procs  # noqa: E402

import grpc  # noqa: E402

BINS = {name: os.environ.get("TWINSPAN_%s_BIN" % name.upper(), "")
        for name in ("target", "drafter", "router", "make_demo")}
PROTO_DIR = os.environ.get("TWINSPAN_PROTO_DIR", "")
CANCELS = int(os.environ.get("TWINSPAN_CANCEL_REQUESTS", "300"))

pb = pb_grpc = dpb = dpb_grpc = None


def setUpModule():
    global pb, pb_grpc, dpb, dpb_grpc
    twinspan_procs.check_binaries(BINS)
    twinspan_procs.generate_stubs(PROTO_DIR, twinspan_procs.tempdir("twinspan-stubs-"))
    from twinspan.v1 import drafter_pb2, drafter_pb2_grpc, serving_pb2, serving_pb2_grpc
    pb, pb_grpc, dpb, dpb_grpc = serving_pb2, serving_pb2_grpc, drafter_pb2, drafter_pb2_grpc


def request(text, max_tokens=24, temperature=0.0, seed=None, draft=True, request_id=""):
    r = pb.GenerateRequest(prompt=text, request_id=request_id)
    r.sampling.max_tokens = max_tokens
    r.sampling.temperature = temperature
    r.sampling.ignore_eos = True
    if seed is not None:
        r.sampling.seed.value = seed
    r.sampling.draft.value = draft
    return r


def generate(stub, req, timeout=120, on_chunk=None):
    final, chunks = None, 0
    for response in stub.Generate(req, timeout=timeout):
        if response.HasField("chunk"):
            chunks += 1
            if on_chunk:
                on_chunk(chunks)
        else:
            final = response.final
    if final is None:
        raise AssertionError("stream ended without a final message")
    return final


def metric(port, name):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                return float(line.rsplit(" ", 1)[1])
    return None


class FakeDrafter:
    """A Drafter server that answers the handshake like a real one and then misbehaves as `mode`
    says (changeable while it runs)."""

    MODES = ("wrong-stream", "stale-round", "future-round", "outside-vocab", "too-long",
             "stall", "error", "valid-but-wrong")

    def __init__(self, info, block_size=4):
        self.info = info
        self.block = block_size
        self.mode = "stall"
        servicer = type("Servicer", (dpb_grpc.DrafterServicer,), {"Draft": self._draft})()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        dpb_grpc.add_DrafterServicer_to_server(servicer, self.server)
        self.address = "127.0.0.1:%d" % self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()

    def _proposal(self, stream, round_):
        v = self.info.vocab_size
        ids = [1, 2, 3][:self.block - 1]
        m = self.mode
        if m == "stall":
            return None
        if m == "error":
            return dpb.DraftReply(error=dpb.StreamError(stream_id=stream, round=round_, code=3,
                                                        message="fake drafter: broken stream"))
        if m == "wrong-stream":
            stream += 1000
        elif m == "stale-round":
            round_ -= 1
        elif m == "future-round":
            round_ += 3
        elif m == "outside-vocab":
            ids = [v + 5] + ids[1:]
        elif m == "too-long":
            ids = ids * 4
        return dpb.DraftReply(proposal=dpb.Proposal(stream_id=stream, round=round_, ids=ids))

    def _draft(self, requests, context):
        for r in requests:
            if r.HasField("hello"):
                yield dpb.DraftReply(hello_ack=dpb.HelloAck(
                    protocol=dpb.DRAFT_PROTOCOL_V1, vocab_size=self.info.vocab_size,
                    tokenizer_sha256=self.info.tokenizer_sha256,
                    target_fingerprint=self.info.checkpoint_fingerprint,
                    block_size=self.block, head_variant="fake", max_streams=64,
                    target_layer_ids=[0], tap_form=dpb.TAP_FORM_RAW, tap_dtype=dpb.DTYPE_F32))
                continue
            if r.HasField("open"):
                reply = self._proposal(r.open.stream_id, 1)
            elif r.HasField("commit"):
                reply = self._proposal(r.commit.stream_id, r.commit.round + 1)
            else:
                continue
            if reply is not None:
                yield reply

    def stop(self):
        self.server.stop(0)


class FaultsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = twinspan_procs.tempdir("twinspan-faults-")
        cls.models = twinspan_procs.make_demo(BINS["make_demo"], os.path.join(cls.work, "models"))
        cls.cluster = twinspan_procs.Cluster(BINS, cls.work)
        try:
            cls.plain = cls.cluster.target("target-plain", cls.models, parallel=4)
        except Exception:
            cls.cluster.stop_all()
            raise
        cls.info = cls.stub(cls.plain).ModelInfo(pb.ModelInfoRequest(), timeout=10)

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop_all()
        if os.environ.get("TWINSPAN_KEEP_LOGS") is None:
            shutil.rmtree(cls.work, ignore_errors=True)

    @staticmethod
    def stub(proc):
        return pb_grpc.ServingStub(grpc.insecure_channel(proc.address))

    def wait_connected(self, target, timeout=20):
        deadline = time.time() + timeout
        while not self.stub(target).ModelInfo(pb.ModelInfoRequest(), timeout=10).drafter_connected:
            self.assertLess(time.time(), deadline, target.tail())
            time.sleep(0.05)

    def wait_idle(self, proc, timeout=10):
        deadline = time.time() + timeout
        while True:
            load = self.stub(proc).GetLoad(pb.GetLoadRequest(), timeout=10)
            if load.running == 0 and load.waiting == 0:
                return
            self.assertLess(time.time(), deadline, "%s: %s" % (proc.name, load))
            time.sleep(0.05)

    def router(self, name, workers, retries=1, extra=()):
        config = os.path.join(self.work, name + ".json")
        with open(config, "w") as f:
            json.dump({"pools": [{"variant": "none", "weight": 1, "workers": workers}],
                       "health_interval_ms": 100, "max_retries": retries}, f)
        r = self.cluster.start(name, "router", ["--config", config, "--listen", "127.0.0.1:0",
                                                "--metrics", "127.0.0.1:0"] + list(extra))
        deadline = time.time() + 20
        while self.stub(r).GetLoad(pb.GetLoadRequest(), timeout=10).max_parallel != len(workers):
            self.assertLess(time.time(), deadline, r.tail())
            time.sleep(0.05)
        return r

    # --- the drafter misbehaving -------------------------------------------------------------

    def test_malformed_stale_and_stalled_proposals_keep_the_tokens(self):
        fake = FakeDrafter(self.info)
        target = self.cluster.target("target-fake-drafter", self.models, drafter=fake.address,
                                     parallel=2, draft_timeout_ms=60)
        try:
            self.wait_connected(target)
            cases = [(0.0, None), (0.8, 11)]
            want = [generate(self.stub(self.plain), request("tell me about rivers", 20, t, s,
                                                             draft=False)) for t, s in cases]
            for mode in FakeDrafter.MODES:
                fake.mode = mode
                for (t, s), plain in zip(cases, want):
                    final = generate(self.stub(target), request("tell me about rivers", 20, t, s))
                    self.assertEqual(final.token_sha256, plain.token_sha256, (mode, t))
                    if mode != "valid-but-wrong":
                        self.assertTrue(final.draft_degraded, (mode, t))
                        self.assertEqual(final.accepted, 0, (mode, t))
            self.assertIn("proposed 12 ids for a block of 4", open(target.log_path).read())
            self.wait_idle(target)
        finally:
            target.stop()
            fake.stop()

    def test_drafter_refuses_truncated_tap_rows_and_keeps_serving(self):
        drafter = self.cluster.drafter("drafter-taps", self.models)
        try:
            with open(os.path.join(self.models, "target", "config.json")) as f:
                hidden = json.load(f)["hidden_size"]
            replies = []
            sent = []
            got = threading.Event()

            def requests():
                yield dpb.DraftRequest(hello=dpb.Hello(
                    protocol=dpb.DRAFT_PROTOCOL_V1, vocab_size=self.info.vocab_size,
                    tokenizer_sha256=self.info.tokenizer_sha256,
                    target_fingerprint=self.info.checkpoint_fingerprint,
                    tap_form=dpb.TAP_FORM_RAW, tap_dtype=dpb.DTYPE_F32, target_name="fake"))
                got.wait(10)
                width = hidden * len(replies[0].hello_ack.target_layer_ids)
                for stream, rows in ((1, 2), (2, 3)):  # stream 1: one row short of its 3 ids
                    data = struct.pack("<%df" % (rows * width), *([0.25] * (rows * width)))
                    sent.append(stream)
                    yield dpb.DraftRequest(open=dpb.Open(
                        stream_id=stream, request_id="taps-%d" % stream, prompt_ids=[5, 6, 7],
                        pending=8, tap_form=dpb.TAP_FORM_RAW,
                        prompt_taps=dpb.Tensor(dtype=dpb.DTYPE_F32, shape=[rows, width],
                                               data=data)))
                    time.sleep(0.5)

            channel = grpc.insecure_channel(drafter.address)
            for reply in dpb_grpc.DrafterStub(channel).Draft(requests(), timeout=30):
                replies.append(reply)
                got.set()
                if len(replies) == 3:
                    break
            self.assertTrue(replies[0].HasField("hello_ack"))
            self.assertTrue(replies[1].HasField("error"), replies[1])
            self.assertEqual(replies[1].error.stream_id, 1)
            self.assertEqual(replies[1].error.code, grpc.StatusCode.INVALID_ARGUMENT.value[0])
            self.assertTrue(replies[2].HasField("proposal"), replies[2])
            self.assertEqual(replies[2].proposal.stream_id, 2)
            channel.close()
        finally:
            drafter.stop()

    # --- a target killed under the router -----------------------------------------------------

    def test_killed_target_retries_unstreamed_requests_and_rejoins_after_restart(self):
        fake = FakeDrafter(self.info)  # stalls every round: 40 ms a token, on any machine
        victim = self.cluster.target("target-victim", self.models, drafter=fake.address,
                                     parallel=1, draft_timeout_ms=40)
        other = self.cluster.target("target-other", self.models, drafter=fake.address,
                                    parallel=1, draft_timeout_ms=40)
        for t_ in (victim, other):
            self.wait_connected(t_)  # drafting, so every round waits out the stall
        router = self.router("router-kill", [victim.address, other.address])
        stub = self.stub(router)
        results = {}

        def run(name, req, on_chunk=None):
            try:
                results[name] = generate(stub, req, on_chunk=on_chunk)
            except grpc.RpcError as e:
                results[name] = e

        streamed = threading.Event()
        threads = []
        try:
            # A runs on the victim, B on the other, C waits on the victim (nothing streamed).
            for name, max_tokens in (("A", 400), ("B", 30), ("C", 20)):
                t = threading.Thread(target=run, args=(
                    name, request("kill me " + name, max_tokens, request_id="kill-" + name),
                    (lambda n: streamed.set()) if name == "A" else None))
                t.start()
                threads.append(t)
                deadline = time.time() + 10
                while self.stub(router).GetLoad(pb.GetLoadRequest(), timeout=5).running < len(
                        threads):
                    self.assertLess(time.time(), deadline, router.tail())
                    time.sleep(0.01)
            self.assertTrue(streamed.wait(10))
            self.assertEqual(self.stub(victim).GetLoad(pb.GetLoadRequest(), timeout=5).waiting, 1)
            port = victim.port
            victim.kill()
            for t in threads:
                t.join(120)
            self.assertIsInstance(results["A"], grpc.RpcError)
            self.assertEqual(results["A"].code(), grpc.StatusCode.UNAVAILABLE)
            self.assertIn(victim.address, results["A"].details())
            want_c = generate(self.stub(self.plain), request("kill me C", 20))
            self.assertNotIsInstance(results["C"], grpc.RpcError, results.get("C"))
            self.assertEqual(results["C"].token_sha256, want_c.token_sha256)
            self.assertEqual(results["C"].served_by, other.address)
            self.assertNotIsInstance(results["B"], grpc.RpcError, results.get("B"))
            # The router keeps serving; a restarted target on the same port rejoins the pool.
            self.assertEqual(generate(stub, request("still here", 4, draft=False)).served_by,
                             other.address)
            revived = self.cluster.start("target-revived", "target", [
                "--model", os.path.join(self.models, "target"), "--listen",
                "127.0.0.1:%d" % port, "--metrics", "127.0.0.1:0", "--name", "target-revived",
                "--parallel", "1", "--threads", "1", "--context", "1024", "--drafter",
                fake.address, "--draft-timeout-ms", "40"])
            deadline = time.time() + 20
            while self.stub(router).GetLoad(pb.GetLoadRequest(), timeout=5).max_parallel != 2:
                self.assertLess(time.time(), deadline, router.tail())
                time.sleep(0.05)
            served = {generate(stub, request("back %d" % i, 2, draft=False)).served_by
                      for i in range(6)}
            self.assertIn("127.0.0.1:%d" % port, served)
            revived.stop()
        finally:
            router.stop()
            other.stop()
            victim.stop()
            fake.stop()

    # --- cancellation leaves nothing behind -----------------------------------------------------

    def test_cancelled_requests_leave_no_state_memory_or_descriptors(self):
        drafter = self.cluster.drafter("drafter-cancel", self.models)
        target = self.cluster.target("target-cancel", self.models, drafter=drafter.address,
                                     parallel=4)
        router = self.router("router-cancel", [target.address])
        procs = (router, target, drafter)
        self.wait_connected(target)
        stub = self.stub(router)
        rng = random.Random(23)

        def cancelled_request(i):
            req = request("cancel me %d" % i, 64, 0.7 if i % 2 else 0.0, seed=i,
                          request_id="cancel-%d" % i)
            if i % 2 == 0:  # the client cancels after a few chunks (or none)
                after = rng.randint(0, 4)
                call = stub.Generate(req, timeout=60)
                try:
                    for n, _ in enumerate(call):
                        if n >= after:
                            break
                finally:
                    call.cancel()
            else:  # the deadline passes at a random point
                try:
                    generate(stub, req, timeout=rng.uniform(0.005, 0.3))
                except grpc.RpcError as e:
                    if e.code() != grpc.StatusCode.DEADLINE_EXCEEDED:
                        raise

        def run(n):
            with concurrent.futures.ThreadPoolExecutor(8) as pool:
                list(pool.map(cancelled_request, range(n)))
            for p in (router, target):
                self.wait_idle(p, timeout=30)
            deadline = time.time() + 10
            while metric(drafter.metrics_port, "twinspan_drafter_streams_open") != 0:
                self.assertLess(time.time(), deadline, "drafter streams still open")
                time.sleep(0.05)

        run(min(200, CANCELS))  # warm-up: thread pools, allocator arenas, caches
        before = {p.name: twinspan_procs.proc_stats(p.proc.pid) for p in procs}
        start = time.time()
        run(CANCELS)
        elapsed = time.time() - start
        after = {p.name: twinspan_procs.proc_stats(p.proc.pid) for p in procs}
        report = {p.name: {k: [before[p.name][k], after[p.name][k]] for k in before[p.name]}
                  for p in procs}
        print("cancelled %d requests in %.1f s: %s" % (CANCELS, elapsed, json.dumps(report)))
        for p in procs:
            b, a = before[p.name], after[p.name]
            self.assertLessEqual(a["fds"], b["fds"] + 2, (p.name, report))
            self.assertLessEqual(a["threads"], b["threads"] + 4, (p.name, report))
            self.assertLessEqual(a["rss_kib"], b["rss_kib"] + 16 * 1024, (p.name, report))  # 16 MiB
        # Still serves, and exactly.
        want = generate(self.stub(self.plain), request("after the storm", 16, draft=False))
        self.assertEqual(generate(stub, request("after the storm", 16)).token_sha256,
                         want.token_sha256)
        for p in procs:
            p.stop()

    # --- drain and overload ---------------------------------------------------------------------

    def test_drain_that_runs_out_stops_requests_with_a_status_that_says_so(self):
        fake = FakeDrafter(self.info)  # 40 ms a token: a 400-token request takes 16 s
        for role in ("target", "router"):
            target = self.cluster.target("target-drain-out-" + role, self.models,
                                         drafter=fake.address, parallel=2, draft_timeout_ms=40,
                                         extra=("--drain-seconds", "1"))
            self.wait_connected(target)
            front = target
            if role == "router":
                front = self.router("router-drain-out", [target.address],
                                    extra=("--drain-seconds", "1"))
            results = {}

            def run():
                try:
                    results["final"] = generate(self.stub(front), request("long", 400))
                except grpc.RpcError as e:
                    results["error"] = e

            thread = threading.Thread(target=run)
            thread.start()
            deadline = time.time() + 10
            while self.stub(target).GetLoad(pb.GetLoadRequest(), timeout=5).running != 1:
                self.assertLess(time.time(), deadline, target.tail())
                time.sleep(0.01)
            start = time.time()
            if role == "router":  # the router's own drain: 1 s, then it ends the call itself
                front.proc.send_signal(signal.SIGTERM)
            else:
                target.proc.send_signal(signal.SIGTERM)
            thread.join(30)
            self.assertEqual(front.proc.wait(30), 0, front.tail())
            self.assertLess(time.time() - start, 1 + 3, "%s drained past --drain-seconds" % role)
            self.assertIn("error", results, results)
            self.assertEqual(results["error"].code(), grpc.StatusCode.UNAVAILABLE, role)
            self.assertIn("%s is draining" % role, results["error"].details())
            self.assertIn("--drain-seconds 1", results["error"].details())
            front.stop()
            target.stop()
        fake.stop()

    def test_overload_beyond_max_waiting_is_refused_at_once(self):
        fake = FakeDrafter(self.info)
        target = self.cluster.target("target-overload", self.models, drafter=fake.address,
                                     parallel=1, draft_timeout_ms=40,
                                     extra=("--max-waiting", "2"))
        self.wait_connected(target)
        router = self.router("router-overload", [target.address], retries=0)
        try:
            # Long enough that the first is still running when the third arrives on a busy machine.
            reqs = [request("overload %d" % i, 48) for i in range(3)]
            wants = [generate(self.stub(self.plain), r) for r in reqs]
            with concurrent.futures.ThreadPoolExecutor(3) as pool:
                admitted = [pool.submit(generate, self.stub(router), r) for r in reqs]
                deadline = time.time() + 10
                while True:
                    load = self.stub(target).GetLoad(pb.GetLoadRequest(), timeout=5)
                    if load.running == 1 and load.waiting == 2:
                        break
                    self.assertLess(time.time(), deadline, load)
                    time.sleep(0.01)
                for front in (target, router):
                    for _ in range(3):
                        start = time.time()
                        with self.assertRaises(grpc.RpcError) as e:
                            generate(self.stub(front), request("one too many", 4))
                        self.assertLess(time.time() - start, 1.0, front.name)
                        self.assertEqual(e.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
                        self.assertIn("--max-waiting 2", e.exception.details())
                finals = [f.result(120) for f in admitted]
            self.assertEqual([f.token_sha256 for f in finals], [w.token_sha256 for w in wants])
        finally:
            router.stop()
            target.stop()
            fake.stop()


if __name__ == "__main__":
    unittest.main(verbosity=2)
