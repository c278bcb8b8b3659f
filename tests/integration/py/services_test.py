"""Integration tests: real twinspan-target / -drafter / -router processes on 127.0.0.1, driven by a
Python client generated from the protos (Debian's python3-grpcio and grpc_tools).

Run by ctest with TWINSPAN_{TARGET,DRAFTER,ROUTER,MAKE_DEMO}_BIN and TWINSPAN_PROTO_DIR set.
The demo pair is random, so drafts are rarely accepted; every exactness check compares token ids
(token_sha256), which is what the contract is about.
"""
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import twinspan_procs  # noqa: E402

import grpc  # noqa: E402

BINS = {
    "target": os.environ.get("TWINSPAN_TARGET_BIN", ""),
    "drafter": os.environ.get("TWINSPAN_DRAFTER_BIN", ""),
    "router": os.environ.get("TWINSPAN_ROUTER_BIN", ""),
    "serve": os.environ.get("TWINSPAN_SERVE_BIN", ""),
    "make_demo": os.environ.get("TWINSPAN_MAKE_DEMO_BIN", ""),
}
PROTO_DIR = os.environ.get("TWINSPAN_PROTO_DIR", "")

pb = None
pb_grpc = None


def setUpModule():
    global pb, pb_grpc
    twinspan_procs.check_binaries(BINS)
    twinspan_procs.generate_stubs(PROTO_DIR, twinspan_procs.tempdir("twinspan-stubs-"))
    from twinspan.v1 import serving_pb2, serving_pb2_grpc
    pb, pb_grpc = serving_pb2, serving_pb2_grpc


def chat_request(text, max_tokens=24, temperature=0.0, seed=None, draft=True, session="",
                 ignore_eos=True):
    r = pb.GenerateRequest()
    r.chat.messages.add(role="user", content=text)
    r.sampling.max_tokens = max_tokens
    r.sampling.temperature = temperature
    r.sampling.ignore_eos = ignore_eos
    if seed is not None:
        r.sampling.seed.value = seed
    r.sampling.draft.value = draft
    r.session_key = session
    return r


def generate(stub, request, timeout=120, on_chunk=None):
    """Returns (ids, text, final) of one Generate call."""
    ids, text, final = [], "", None
    for i, response in enumerate(stub.Generate(request, timeout=timeout)):
        if response.HasField("chunk"):
            ids.extend(response.chunk.ids)
            text += response.chunk.text
            if on_chunk:
                on_chunk(i)
        else:
            final = response.final
    if final is None:
        raise AssertionError("stream ended without a final message")
    return ids, text, final


def scrape(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
        return r.read().decode()


def metric_sum(text, name, **labels):
    total = 0.0
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        if all('%s="%s"' % (k, v) in line for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


class ServicesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = twinspan_procs.tempdir("twinspan-services-")
        cls.models = twinspan_procs.make_demo(BINS["make_demo"], os.path.join(cls.work, "models"))
        cls.cluster = twinspan_procs.Cluster(BINS, cls.work)
        c = cls.cluster
        try:
            cls.drafter = c.drafter("drafter", cls.models)
            cls.drafter_full = c.drafter("drafter-full", cls.models, head="full")
            cls.split = c.target("target-split", cls.models, drafter=cls.drafter.address)
            cls.full = c.target("target-full", cls.models, drafter=cls.drafter_full.address)
            cls.inproc = c.target("target-inproc", cls.models, in_process_drafter=True)
            cls.plain = c.target("target-plain", cls.models)
            config = {
                "pools": [
                    {"variant": "two-span", "weight": 50, "workers": [cls.split.address]},
                    {"variant": "full", "weight": 50, "workers": [cls.full.address]},
                ],
                "health_interval_ms": 200,
            }
            cls.router_config = os.path.join(cls.work, "router.json")
            with open(cls.router_config, "w") as f:
                json.dump(config, f)
            cls.router = c.router("router", cls.router_config)
            cls.serve = c.serve("serve", cls.models)
        except Exception:
            c.stop_all()
            raise
        cls.channels = {}
        cls.wait_drafters()

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop_all()
        for ch in cls.channels.values():
            ch.close()
        if os.environ.get("TWINSPAN_KEEP_LOGS") is None:
            shutil.rmtree(cls.work, ignore_errors=True)

    @classmethod
    def stub(cls, proc):
        if proc.address not in cls.channels:
            cls.channels[proc.address] = grpc.insecure_channel(proc.address)
        return pb_grpc.ServingStub(cls.channels[proc.address])

    @classmethod
    def wait_drafters(cls, timeout=30):
        deadline = time.time() + timeout
        for t in (cls.split, cls.full, cls.inproc, cls.serve):
            while not cls.stub(t).ModelInfo(pb.ModelInfoRequest(), timeout=10).drafter_connected:
                if time.time() > deadline:
                    raise AssertionError("%s never connected to its drafter:\n%s" % (t.name, t.tail()))
                time.sleep(0.1)

    # --- exactness ------------------------------------------------------------------------------

    def test_drafted_equals_plain_through_router_split_and_in_process(self):
        router = self.stub(self.router)
        for temperature, seed in ((0.0, None), (0.8, 7), (1.0, 12345)):
            req = chat_request("Tell me a story about a dragon.", max_tokens=40,
                               temperature=temperature, seed=seed)
            want_ids, want_text, want = generate(self.stub(self.plain), req)
            self.assertEqual(want.drafted, 0)
            self.assertEqual(want.head_variant, "none")
            for name, stub in (("router", router), ("split", self.stub(self.split)),
                               ("in-process", self.stub(self.inproc))):
                ids, text, final = generate(stub, req)
                self.assertEqual(final.token_sha256, want.token_sha256, (name, temperature))
                self.assertEqual(ids, want_ids, (name, temperature))
                self.assertEqual(text, want_text, (name, temperature))
                self.assertGreater(final.drafted, 0, name)
                self.assertEqual(sum(final.tokens_per_round), final.completion_tokens - 1)
            off = chat_request("Tell me a story about a dragon.", max_tokens=40,
                               temperature=temperature, seed=seed, draft=False)
            _, _, final = generate(self.stub(self.split), off)
            self.assertEqual(final.token_sha256, want.token_sha256)
            self.assertEqual(final.drafted, 0)

    def test_concurrent_equals_solo_and_repeat_equals_first(self):
        prompts = ["hello, how are you today?", "what is the weather like?",
                   "the quick brown fox", "please tell me a story"]
        reqs = [chat_request(p, max_tokens=32, temperature=0.7 if i % 2 else 0.0, seed=i)
                for i, p in enumerate(prompts)]
        stub = self.stub(self.split)
        solo = [generate(stub, r)[2].token_sha256 for r in reqs]
        for streams in (1, 2, 4):
            with concurrent.futures.ThreadPoolExecutor(streams) as pool:
                got = list(pool.map(lambda r: generate(stub, r)[2].token_sha256, reqs[:streams]))
            self.assertEqual(got, solo[:streams], "streams=%d" % streams)
        self.assertEqual([generate(stub, r)[2].token_sha256 for r in reqs], solo)

    def test_single_process_mode_equals_plain(self):
        # twinspan-serve: router, target and in-process drafter in one process.
        serve = self.stub(self.serve)
        info = serve.ModelInfo(pb.ModelInfoRequest(), timeout=10)
        self.assertTrue(info.drafter_connected)
        self.assertEqual(list(info.head_variants), ["two-span"])
        for temperature, seed in ((0.0, None), (0.9, 21)):
            req = chat_request("Once upon a time", max_tokens=40, temperature=temperature,
                               seed=seed)
            want_ids, want_text, want = generate(self.stub(self.plain), req)
            ids, text, final = generate(serve, req)
            self.assertEqual(final.token_sha256, want.token_sha256, temperature)
            self.assertEqual((ids, text), (want_ids, want_text), temperature)
            self.assertGreater(final.drafted, 0)
            self.assertEqual(final.served_by, "in-process")
            self.assertEqual(final.head_variant, "two-span")
            off = chat_request("Once upon a time", max_tokens=40, temperature=temperature,
                               seed=seed, draft=False)
            _, _, plain = generate(serve, off)
            self.assertEqual(plain.token_sha256, want.token_sha256)
            self.assertEqual(plain.drafted, 0)
        text = scrape(self.serve.metrics_port)
        self.assertIn("twinspan_router_requests_total", text)
        self.assertIn("twinspan_spec_decode_num_drafts_total", text)

    # --- deadlines and cancellation ------------------------------------------------------------

    def wait_router_healthy(self, router, workers=1, timeout=10):
        stub = self.stub(router)
        deadline = time.time() + timeout
        while stub.GetLoad(pb.GetLoadRequest(), timeout=10).max_parallel != workers:
            self.assertLess(time.time(), deadline, router.tail())
            time.sleep(0.05)

    def wait_idle(self, proc, timeout=10):
        stub = self.stub(proc)
        deadline = time.time() + timeout
        while True:
            load = stub.GetLoad(pb.GetLoadRequest(), timeout=10)
            if load.running == 0 and load.waiting == 0:
                return
            self.assertLess(time.time(), deadline, "%s still runs %d, waits %d" % (
                proc.name, load.running, load.waiting))
            time.sleep(0.05)

    def test_deadline_through_router_is_prompt_and_names_the_deadline(self):
        self.wait_idle(self.split)
        req = chat_request("a very long story", max_tokens=1000)
        req.head_variant = "two-span"
        req.request_id = "deadline-through-router"
        start = time.time()
        with self.assertRaises(grpc.RpcError) as e:
            generate(self.stub(self.router), req, timeout=1.0)
        elapsed = time.time() - start
        self.assertEqual(e.exception.code(), grpc.StatusCode.DEADLINE_EXCEEDED)
        self.assertIn("deadline", e.exception.details())
        self.assertIn("set by the client", e.exception.details())
        self.assertIn("deadline-through-router", e.exception.details())
        self.assertLess(elapsed, 2.0)
        self.wait_idle(self.split, timeout=5)
        # The target alone names it too.
        req.request_id = "deadline-at-target"
        with self.assertRaises(grpc.RpcError) as e:
            generate(self.stub(self.split), req, timeout=1.0)
        self.assertEqual(e.exception.code(), grpc.StatusCode.DEADLINE_EXCEEDED)
        self.assertIn("deadline-at-target", e.exception.details())
        self.wait_idle(self.split, timeout=5)

    def test_cancelled_client_frees_the_target_stream(self):
        self.wait_idle(self.split)
        req = chat_request("another very long story", max_tokens=1000)
        req.head_variant = "two-span"
        req.request_id = "cancel-through-router"
        call = self.stub(self.router).Generate(req, timeout=120)
        next(call)
        next(call)
        self.assertEqual(self.stub(self.split).GetLoad(pb.GetLoadRequest(), timeout=10).running,
                         1)
        call.cancel()
        self.wait_idle(self.split, timeout=5)
        deadline = time.time() + 5
        while "[cancel-through-router] finished" not in open(self.split.log_path).read():
            self.assertLess(time.time(), deadline, self.split.tail())
            time.sleep(0.05)
        self.assertIn("reason abort", [l for l in open(self.split.log_path)
                                         if "[cancel-through-router] finished" in l][0])

    def silent_drafter(self):
        """A Drafter server that completes the handshake and then never proposes, so every round
        of a drafted stream waits out --draft-timeout-ms: a request that holds its slot."""
        from concurrent import futures
        from twinspan.v1 import drafter_pb2 as dpb, drafter_pb2_grpc as dpb_grpc
        info = self.stub(self.plain).ModelInfo(pb.ModelInfoRequest(), timeout=10)

        class Silent(dpb_grpc.DrafterServicer):
            def Draft(self, requests, context):
                for r in requests:
                    if r.HasField("hello"):
                        yield dpb.DraftReply(hello_ack=dpb.HelloAck(
                            protocol=dpb.DRAFT_PROTOCOL_V1, vocab_size=info.vocab_size,
                            tokenizer_sha256=info.tokenizer_sha256,
                            target_fingerprint=info.checkpoint_fingerprint, block_size=4,
                            head_variant="silent", max_streams=8, target_layer_ids=[0],
                            tap_form=dpb.TAP_FORM_RAW, tap_dtype=dpb.DTYPE_F32))

        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        dpb_grpc.add_DrafterServicer_to_server(Silent(), server)
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        return server, "127.0.0.1:%d" % port

    def test_cancel_reaches_a_queued_request_at_once(self):
        # One live stream, held by a drafter that never answers: a second request waits in the
        # target's queue, streaming nothing, so only the router's cancel hook (not a later read)
        # can tell the target it is gone.
        c = self.cluster
        silent, silent_address = self.silent_drafter()
        target = c.target("target-one-slot", self.models, drafter=silent_address, parallel=1)
        deadline = time.time() + 20
        while not self.stub(target).ModelInfo(pb.ModelInfoRequest(), timeout=10).drafter_connected:
            self.assertLess(time.time(), deadline, target.tail())
            time.sleep(0.05)
        config = os.path.join(self.work, "router-one-slot.json")
        with open(config, "w") as f:
            json.dump({"pools": [{"variant": "none", "weight": 1, "workers": [target.address]}],
                       "health_interval_ms": 200}, f)
        router = c.router("router-one-slot", config)
        self.wait_router_healthy(router)
        stub = self.stub(router)
        busy = chat_request("keep the slot busy", max_tokens=1000)
        busy.request_id = "slot-holder"
        holder = stub.Generate(busy, timeout=120)
        next(holder)
        queued = chat_request("wait in line", max_tokens=8, draft=False)
        queued.request_id = "queued-then-cancelled"
        call = stub.Generate(queued, timeout=120)
        deadline = time.time() + 10
        while self.stub(target).GetLoad(pb.GetLoadRequest(), timeout=10).waiting != 1:
            self.assertLess(time.time(), deadline, target.tail())
            time.sleep(0.02)
        call.cancel()
        deadline = time.time() + 2
        while "[queued-then-cancelled] call cancelled" not in open(target.log_path).read():
            self.assertLess(time.time(), deadline, "the target never heard of the cancel:\n" +
                            target.tail())
            time.sleep(0.02)
        self.assertNotIn("[slot-holder] finished", open(target.log_path).read())
        holder.cancel()
        self.wait_idle(target, timeout=10)
        router.stop()
        target.stop()
        silent.stop(0)

    def test_server_side_request_limit_names_the_flag(self):
        t = self.cluster.target("target-limited", self.models, extra=("--max-request-seconds",
                                                                       "0.4"))
        req = chat_request("go on and on", max_tokens=1000)
        start = time.time()
        with self.assertRaises(grpc.RpcError) as e:
            generate(self.stub(t), req)  # no client deadline
        self.assertEqual(e.exception.code(), grpc.StatusCode.DEADLINE_EXCEEDED)
        self.assertIn("--max-request-seconds", e.exception.details())
        self.assertLess(time.time() - start, 2.0)
        self.wait_idle(t, timeout=5)
        t.stop()

    def test_long_prefill_stops_at_its_deadline_and_frees_the_stream(self):
        # A prompt of 6,000 ids takes the demo target seconds to prefill on one thread (256-row
        # chunks); with a 0.3 s deadline the engine stops between chunks, so the stream is gone
        # long before the prefill would have ended.
        args = ["--model", os.path.join(self.models, "target"), "--listen", "127.0.0.1:0",
                "--metrics", "127.0.0.1:0", "--name", "target-long", "--parallel", "1",
                "--threads", "1", "--context", "8192"]
        t = self.cluster.start("target-long", "target", args)
        stub = self.stub(t)
        req = pb.GenerateRequest()
        req.prompt_ids.ids.extend((i * 7919) % 500 for i in range(6000))
        req.sampling.max_tokens = 1
        start = time.time()
        generate(stub, req)
        full = time.time() - start
        self.assertGreater(full, 1.0, "the prefill is too short to tell a stop from its end")
        req.request_id = "long-prefill-deadline"
        req.sampling.max_tokens = 8
        # Other ids: the same prompt would resume from the prefix cache instead of prefilling.
        del req.prompt_ids.ids[:]
        req.prompt_ids.ids.extend((i * 7919 + 1) % 500 for i in range(6000))
        start = time.time()
        with self.assertRaises(grpc.RpcError) as e:
            generate(stub, req, timeout=0.3)
        self.assertEqual(e.exception.code(), grpc.StatusCode.DEADLINE_EXCEEDED)
        self.wait_idle(t, timeout=full / 2)
        self.assertLess(time.time() - start, 0.3 + full / 2, "prefill of %.1f s" % full)
        deadline = time.time() + 5
        while "[long-prefill-deadline] prefill stopped" not in open(t.log_path).read():
            self.assertLess(time.time(), deadline, t.tail())
            time.sleep(0.05)
        t.stop()

    # --- devices --------------------------------------------------------------------------------

    def test_device_flag_and_model_info(self):
        for proc in (self.plain, self.split, self.inproc):
            info = self.stub(proc).ModelInfo(pb.ModelInfoRequest(), timeout=10)
            self.assertEqual(info.backend, "cpu", proc.name)
        self.assertEqual(self.stub(self.serve).ModelInfo(pb.ModelInfoRequest(), timeout=10).backend,
                         "cpu")
        target = os.path.join(self.models, "target")
        drafter = os.path.join(self.models, "drafter")
        runs = (("target", ["--model", target, "--device", "gpu0"], "--device gpu0"),
                ("serve", ["--model", target, "--device", "cuda:x"], "--device cuda:x"),
                ("drafter", ["--model", drafter, "--target-model", target, "--device", "cuda"],
                 "--device cuda"),
                ("target", ["--model", target, "--drafter-device", "cpu"], "--drafter-device"))
        for binary, args, want in runs:
            p = subprocess.run([BINS[binary]] + args + ["--listen", "127.0.0.1:0"],
                               capture_output=True, text=True, timeout=60)
            self.assertNotEqual(p.returncode, 0, (binary, args))
            self.assertIn("INVALID_ARGUMENT", p.stderr, (binary, args))
            self.assertIn(want, p.stderr, (binary, args))

    # --- request ids, retries, drain -------------------------------------------------------------

    def test_request_id_in_all_three_services_logs(self):
        req = chat_request("trace me", max_tokens=6)
        req.head_variant = "two-span"
        req.request_id = "trace-all-three"
        generate(self.stub(self.router), req)
        time.sleep(0.2)
        for proc in (self.router, self.split, self.drafter):
            self.assertIn("[trace-all-three]", open(proc.log_path).read(), proc.name)

    def fake_worker(self, mode):
        """A Serving server that looks healthy but fails every Generate with UNAVAILABLE, before
        streaming anything ("refuse") or after one chunk ("stream-then-fail")."""
        from concurrent import futures

        class Fake(pb_grpc.ServingServicer):
            generates = 0

            def GetLoad(self, request, context):
                return pb.GetLoadResponse(max_parallel=1)

            def Generate(self, request, context):
                Fake.generates += 1
                if mode == "stream-then-fail":
                    yield pb.GenerateResponse(request_id=request.request_id,
                                              chunk=pb.GenerateChunk(text="x", ids=[1]))
                context.abort(grpc.StatusCode.UNAVAILABLE, "fake worker: " + mode)

        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        pb_grpc.add_ServingServicer_to_server(Fake(), server)
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        return server, "127.0.0.1:%d" % port, Fake

    def test_retries_only_before_anything_was_streamed(self):
        c = self.cluster
        for mode in ("refuse", "stream-then-fail"):
            server, address, fake = self.fake_worker(mode)
            config = os.path.join(self.work, "router-%s.json" % mode)
            with open(config, "w") as f:  # the fake first: with equal loads it is picked first
                json.dump({"pools": [{"variant": "none", "weight": 1,
                                      "workers": [address, self.plain.address]}],
                           "health_interval_ms": 100, "max_retries": 1}, f)
            router = c.router("router-" + mode, config)
            self.wait_router_healthy(router, workers=2)
            stub = self.stub(router)
            req = chat_request("retry me", max_tokens=8, draft=False)
            req.request_id = "retry-" + mode
            if mode == "refuse":
                _, _, final = generate(stub, req)
                self.assertEqual(final.served_by, self.plain.address)
                self.assertEqual(fake.generates, 1)
                self.assertEqual(metric_sum(scrape(router.metrics_port),
                                            "twinspan_router_retries_total"), 1)
            else:
                chunks = []
                with self.assertRaises(grpc.RpcError) as e:
                    generate(stub, req, on_chunk=chunks.append)
                self.assertEqual(e.exception.code(), grpc.StatusCode.UNAVAILABLE)
                self.assertIn("fake worker", e.exception.details())
                self.assertEqual(len(chunks), 1)
                self.assertEqual(fake.generates, 1)
                self.assertNotIn("[retry-stream-then-fail]", open(self.plain.log_path).read())
                self.assertEqual(metric_sum(scrape(router.metrics_port),
                                            "twinspan_router_retries_total"), 0)
            router.stop()
            server.stop(0)

    def test_sigterm_drains_target_and_router(self):
        # A drafter that never answers paces the target at one token per 40 ms draft timeout, so
        # the request is still running while the test watches the drain, on any machine's speed.
        c = self.cluster
        silent, silent_address = self.silent_drafter()

        def start_target(name):
            t = c.target(name, self.models, drafter=silent_address, parallel=1,
                         draft_timeout_ms=40)
            deadline = time.time() + 20
            while not self.stub(t).ModelInfo(pb.ModelInfoRequest(), timeout=10).drafter_connected:
                self.assertLess(time.time(), deadline, t.tail())
                time.sleep(0.05)
            return t

        def start_router(name, target):
            with open(config, "w") as f:
                json.dump({"pools": [{"variant": "none", "weight": 1,
                                      "workers": [target.address]}],
                           "health_interval_ms": 100}, f)
            r = c.router(name, config)
            self.wait_router_healthy(r)
            return r

        config = os.path.join(self.work, "router-drain.json")
        target = start_target("target-drain")
        router = start_router("router-drain", target)
        req = chat_request("drain gently", max_tokens=60)
        _, _, want = generate(self.stub(self.plain), chat_request("drain gently", max_tokens=60,
                                                                   draft=False))
        ident = lambda b: b  # noqa: E731
        for role in ("target", "router"):
            victim = target if role == "target" else router
            results = {}

            def run():
                try:
                    results["final"] = generate(self.stub(router), req)[2]
                except grpc.RpcError as err:
                    results["error"] = err

            import threading
            thread = threading.Thread(target=run)
            thread.start()
            deadline = time.time() + 10
            while self.stub(target).GetLoad(pb.GetLoadRequest(), timeout=10).running != 1:
                self.assertLess(time.time(), deadline, target.tail())
                time.sleep(0.01)
            victim.proc.send_signal(__import__("signal").SIGTERM)
            # Draining, on the router as on a target: health says NOT_SERVING, GetLoad says
            # draining, and new requests are refused with a status that says so.
            deadline = time.time() + 5
            while True:
                check = grpc.insecure_channel(victim.address).unary_unary(
                    "/grpc.health.v1.Health/Check", request_serializer=ident,
                    response_deserializer=ident)
                if check(b"", timeout=5) == b"\x08\x02":
                    break
                self.assertLess(time.time(), deadline, victim.name)
                time.sleep(0.02)
            self.assertTrue(self.stub(victim).GetLoad(pb.GetLoadRequest(), timeout=5).draining,
                            victim.name)
            with self.assertRaises(grpc.RpcError) as e:
                generate(self.stub(victim), chat_request("late", max_tokens=2))
            self.assertEqual(e.exception.code(), grpc.StatusCode.UNAVAILABLE, victim.name)
            self.assertIn("draining", e.exception.details(), victim.name)
            self.assertEqual(self.stub(target).GetLoad(pb.GetLoadRequest(), timeout=5).running,
                             1, "the drain did not wait for the running request")
            thread.join(60)
            self.assertNotIn("error", results, results.get("error"))
            self.assertEqual(results["final"].token_sha256, want.token_sha256, victim.name)
            self.assertEqual(victim.proc.wait(30), 0, victim.tail())
            if role == "target":  # a new target, and a router pointing at it, for the router's turn
                target = start_target("target-drain-2")
                router.stop()
                router = start_router("router-drain-2", target)
        target.stop()
        silent.stop(0)

    # --- fused and bf16 taps ---------------------------------------------------------------------

    def test_fused_and_bf16_taps_equal_plain(self):
        c = self.cluster
        drafter_dir = os.path.join(self.models, "drafter")
        targets = {
            "fused": c.target("target-fused", self.models, drafter=self.drafter.address,
                              extra=("--fuse-taps", drafter_dir)),
            "bf16": c.target("target-bf16", self.models, drafter=self.drafter.address,
                             extra=("--bf16-taps",)),
            "fused-bf16": c.target("target-fused-bf16", self.models,
                                   drafter=self.drafter.address,
                                   extra=("--fuse-taps", drafter_dir, "--bf16-taps")),
        }
        for name, t in targets.items():
            deadline = time.time() + 30
            while not self.stub(t).ModelInfo(pb.ModelInfoRequest(), timeout=10).drafter_connected:
                self.assertLess(time.time(), deadline, "%s:\n%s" % (name, t.tail()))
                time.sleep(0.1)
        for temperature, seed in ((0.0, None), (0.8, 5)):
            req = chat_request("Tell me about rivers.", max_tokens=32, temperature=temperature,
                               seed=seed)
            _, _, want = generate(self.stub(self.plain), req)
            for name, t in targets.items():
                _, _, final = generate(self.stub(t), req)
                self.assertEqual(final.token_sha256, want.token_sha256, (name, temperature))
                self.assertGreater(final.drafted, 0, name)
                self.assertFalse(final.draft_degraded, name)
        self.assertIn("tap rows TAP_FORM_FUSED DTYPE_BF16", open(self.drafter.log_path).read())
        for t in targets.values():
            t.stop()

    def test_fused_taps_from_another_drafter_checkpoint_are_refused(self):
        # A copy of the drafter with a changed config.json has another fingerprint.
        other = os.path.join(self.work, "other-drafter")
        shutil.copytree(os.path.join(self.models, "drafter"), other, dirs_exist_ok=True)
        with open(os.path.join(other, "config.json")) as f:
            config = json.load(f)
        config["note"] = "another checkpoint"
        with open(os.path.join(other, "config.json"), "w") as f:
            json.dump(config, f)
        t = self.cluster.target("target-wrong-fuser", self.models, drafter=self.drafter.address,
                                extra=("--fuse-taps", other))
        deadline = time.time() + 20
        while "fuses taps with the fc + hidden_norm of drafter checkpoint" not in open(
                t.log_path).read():
            self.assertLess(time.time(), deadline, t.tail())
            time.sleep(0.1)
        self.assertFalse(self.stub(t).ModelInfo(pb.ModelInfoRequest(), timeout=10)
                         .drafter_connected)
        _, _, final = generate(self.stub(t), chat_request("hi", max_tokens=4))
        self.assertEqual(final.drafted, 0)
        t.stop()

    # --- drafter failure --------------------------------------------------------------------------

    def test_killing_the_drafter_mid_request_keeps_tokens_and_a_restart_is_picked_up(self):
        c = self.cluster
        drafter = c.drafter("drafter-victim", self.models)
        target = c.target("target-victim", self.models, drafter=drafter.address, parallel=1)
        stub = self.stub(target)
        deadline = time.time() + 30
        while not stub.ModelInfo(pb.ModelInfoRequest(), timeout=10).drafter_connected:
            self.assertLess(time.time(), deadline, target.tail())
            time.sleep(0.1)
        req = chat_request("a long story, please", max_tokens=160, temperature=0.5, seed=3)
        _, _, want = generate(self.stub(self.plain), req)

        def kill_after_a_few(i):
            if i == 4:
                drafter.kill()

        _, _, final = generate(stub, req, on_chunk=kill_after_a_few)
        self.assertEqual(final.token_sha256, want.token_sha256)
        self.assertTrue(final.draft_degraded)
        self.assertGreater(final.drafted, 0)

        port = drafter.port
        restarted = c.drafter("drafter-restarted", self.models, port=port)
        deadline = time.time() + 30
        while not stub.ModelInfo(pb.ModelInfoRequest(), timeout=10).drafter_connected:
            self.assertLess(time.time(), deadline, target.tail())
            time.sleep(0.1)
        _, _, again = generate(stub, req)
        self.assertEqual(again.token_sha256, want.token_sha256)
        self.assertGreater(again.drafted, 0)
        self.assertFalse(again.draft_degraded)
        restarted.stop()
        target.stop()

    # --- A/B ----------------------------------------------------------------------------------------

    def test_ab_sessions_stick_to_their_variant_and_metrics_count_per_variant(self):
        router = self.stub(self.router)
        # Each pool's worker and its drafter, as the router config and setUpClass wire them.
        pools = {"two-span": (self.split, self.drafter), "full": (self.full, self.drafter_full)}
        procs = [p for pair in pools.values() for p in pair]
        before = scrape(self.router.metrics_port)
        before_workers = {p.name: scrape(p.metrics_port) for p in procs}
        seen = {}
        for s in range(16):
            key = "session-%d" % s
            for _ in range(2):
                _, _, final = generate(router, chat_request("hi", max_tokens=4, session=key))
                seen.setdefault(key, set()).add(final.head_variant)
        for key, variants in seen.items():
            self.assertEqual(len(variants), 1, "session %s moved: %s" % (key, variants))
        counts = {}
        for variants in seen.values():
            v = next(iter(variants))
            counts[v] = counts.get(v, 0) + 2
        self.assertEqual(set(counts), {"two-span", "full"}, counts)
        after = scrape(self.router.metrics_port)
        after_workers = {p.name: scrape(p.metrics_port) for p in procs}
        for variant, n in counts.items():
            delta = (metric_sum(after, "twinspan_router_requests_total", head_variant=variant) -
                     metric_sum(before, "twinspan_router_requests_total", head_variant=variant))
            self.assertEqual(delta, n, variant)
        # The workers' side: each target served exactly its variant's requests with its own drafter's
        # head, and each drafter proposed only for its own head.
        def delta(proc, name, **labels):
            return (metric_sum(after_workers[proc.name], name, **labels) -
                    metric_sum(before_workers[proc.name], name, **labels))

        for variant, (target, drafter) in pools.items():
            self.assertEqual(delta(target, "twinspan_request_success_total"), counts[variant],
                             target.name)
            rounds = delta(target, "twinspan_spec_decode_tokens_per_round_count")
            self.assertGreater(rounds, 0, target.name)
            self.assertEqual(delta(target, "twinspan_spec_decode_tokens_per_round_count",
                                   head_variant=variant), rounds, target.name)
            proposals = delta(drafter, "twinspan_drafter_propose_seconds_count")
            self.assertGreater(proposals, 0, drafter.name)
            self.assertEqual(delta(drafter, "twinspan_drafter_propose_seconds_count",
                                   head_variant=variant), proposals, drafter.name)
            load = self.stub(target).GetLoad(pb.GetLoadRequest(), timeout=10)
            self.assertEqual(load.head_variant, variant, target.name)
            self.assertTrue(load.drafter_connected, target.name)
        # The session key also works as metadata, and a forced variant wins.
        _, _, a = generate(router, chat_request("hi", max_tokens=2, session="session-3"))
        req = chat_request("hi", max_tokens=2)
        final = None
        for r in router.Generate(req, metadata=(("x-session-key", "session-3"),), timeout=60):
            if r.HasField("final"):
                final = r.final
        self.assertEqual(final.head_variant, a.head_variant)
        forced = chat_request("hi", max_tokens=2, session="session-3")
        forced.head_variant = "full"
        self.assertEqual(generate(router, forced)[2].head_variant, "full")

    # --- metrics -------------------------------------------------------------------------------------

    def test_metrics_pass_promtool(self):
        promtool = shutil.which("promtool")
        self.assertIsNotNone(promtool, "promtool missing: install Debian's prometheus package")
        generate(self.stub(self.router), chat_request("metrics please", max_tokens=8))
        for proc in (self.router, self.split, self.drafter):
            text = scrape(proc.metrics_port)
            r = subprocess.run([promtool, "check", "metrics"], input=text, text=True,
                               capture_output=True)
            self.assertEqual(r.returncode, 0, "%s: %s%s" % (proc.name, r.stdout, r.stderr))
        text = scrape(self.split.metrics_port)
        for name in ("twinspan_spec_decode_num_drafts_total",
                     "twinspan_spec_decode_num_draft_tokens_total",
                     "twinspan_spec_decode_num_accepted_tokens_total",
                     "twinspan_spec_decode_tokens_per_round_bucket",
                     "twinspan_round_phase_seconds_bucket",
                     "twinspan_time_to_first_token_seconds_bucket",
                     "twinspan_num_requests_running"):
            self.assertIn(name, text)
        self.assertIn('head_variant="two-span"', text)

    # --- API surface ---------------------------------------------------------------------------------

    def test_limits_errors_and_api(self):
        stub = self.stub(self.split)
        with self.assertRaises(grpc.RpcError) as e:
            generate(stub, chat_request("x" * 5000, max_tokens=4))
        self.assertEqual(e.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
        self.assertIn("limit", e.exception.details())
        with self.assertRaises(grpc.RpcError) as e:
            generate(stub, chat_request("hi", max_tokens=100000))
        self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("max_tokens", e.exception.details())
        bad = chat_request("hi")
        bad.sampling.temperature = -1
        with self.assertRaises(grpc.RpcError) as e:
            generate(stub, bad)
        self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        with self.assertRaises(grpc.RpcError) as e:
            generate(stub, pb.GenerateRequest())
        self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        ids = pb.GenerateRequest()
        ids.prompt_ids.ids.extend([1, 2, 3, 100000])
        with self.assertRaises(grpc.RpcError) as e:
            generate(stub, ids)
        self.assertIn("vocabulary", e.exception.details())

        tok = stub.Tokenize(pb.TokenizeRequest(text="hello world"), timeout=10)
        self.assertGreater(len(tok.ids), 0)
        info = self.stub(self.router).ModelInfo(pb.ModelInfoRequest(), timeout=10)
        self.assertEqual(info.vocab_size, 512)
        self.assertEqual(sorted(info.head_variants), ["full", "two-span"])
        self.assertEqual(len(info.tokenizer_sha256), 64)

        # Raw prompt and stop strings: the reply ends before the stop string.
        raw = pb.GenerateRequest(prompt="the quick brown fox")
        raw.sampling.max_tokens = 30
        raw.sampling.ignore_eos = True
        full_ids, full_text, _ = generate(stub, raw)
        # A stop string of two ASCII letters from the middle of the reply (random text is mostly
        # bytes that decode to U+FFFD, which a stop string should not rely on).
        starts = [i for i in range(2, len(full_text) - 1)
                  if full_text[i:i + 2].isascii() and full_text[i:i + 2].isalpha()]
        self.assertTrue(starts, "no ASCII pair in %r" % full_text)
        stop = full_text[starts[0]:starts[0] + 2]
        raw.sampling.stop.append(stop)
        _, text, final = generate(stub, raw)
        self.assertEqual(final.finish_reason, pb.FINISH_REASON_STOP, (stop, full_text, text))
        self.assertEqual(text, full_text[:full_text.find(stop)])

        # Abort a running request by id.
        long = chat_request("go on", max_tokens=1000)
        long.request_id = "abort-me"
        stream = stub.Generate(long, timeout=60)
        first = next(stream)
        self.assertTrue(stub.Abort(pb.AbortRequest(request_id="abort-me"), timeout=10).found)
        final = None
        for r in stream:
            if r.HasField("final"):
                final = r.final
        self.assertEqual(final.finish_reason, pb.FINISH_REASON_ABORTED)

    def test_health_and_reflection(self):
        # Raw calls: Debian ships no grpc_health / grpc_reflection Python modules.
        ident = lambda b: b
        for proc in (self.router, self.split, self.drafter):
            ch = grpc.insecure_channel(proc.address)
            check = ch.unary_unary("/grpc.health.v1.Health/Check", request_serializer=ident,
                                   response_deserializer=ident)
            self.assertEqual(check(b"", timeout=10), b"\x08\x01", proc.name)  # status: SERVING
            info = ch.stream_stream(
                "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
                request_serializer=ident, response_deserializer=ident)
            reply = b"".join(info(iter([b"\x3a\x00"]), timeout=10))  # list_services: ""
            want = b"twinspan.v1.Drafter" if proc is self.drafter else b"twinspan.v1.Serving"
            self.assertIn(want, reply, proc.name)
            ch.close()

if __name__ == "__main__":
    unittest.main(verbosity=2)
