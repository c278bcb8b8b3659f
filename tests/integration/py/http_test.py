"""The OpenAI-compatible HTTP API end to end: twinspan-serve (router, target and in-process drafter)
and twinspan-router in front of a plain target, each with --http, on 127.0.0.1, driven with curl,
Python's http.client (a client that leaves mid-stream) and the official `openai` npm client.
Uses the trained demo pair (models/demo), so drafts are accepted and structured output has a
real model to constrain. Checks are on token ids (token_sha256): HTTP == gRPC, streamed == whole,
drafted == plain under a grammar, router == serve.

Run by ctest with TWINSPAN_{SERVE,ROUTER,TARGET}_BIN, TWINSPAN_MODELS_DIR, TWINSPAN_PROTO_DIR and
TWINSPAN_OPENAI_PACKAGE (the npm `openai` package directory) set.
"""
import http.client
import json
import os
import re
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import twinspan_procs  # noqa: E402

import grpc  # noqa: E402

BINS = {
    "serve": os.environ.get("TWINSPAN_SERVE_BIN", ""),
    "router": os.environ.get("TWINSPAN_ROUTER_BIN", ""),
    "target": os.environ.get("TWINSPAN_TARGET_BIN", ""),
}
MODELS = os.environ.get("TWINSPAN_MODELS_DIR", "")
PROTO_DIR = os.environ.get("TWINSPAN_PROTO_DIR", "")
OPENAI_PACKAGE = os.environ.get("TWINSPAN_OPENAI_PACKAGE", "")
NODE_CHECK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "js",
                          "openai_client_check.mjs")

SCHEMA = {"type": "object",
          "properties": {"name": {"type": "string", "maxLength": 16},
                         "age": {"type": "integer"},
                         "langs": {"type": "array", "items": {"enum": ["python", "c++", "rust"]},
                                   "maxItems": 3}},
          "required": ["name", "age", "langs"]}

pb = None
pb_grpc = None


def setUpModule():
    global pb, pb_grpc
    twinspan_procs.check_binaries(BINS)
    twinspan_procs.generate_stubs(PROTO_DIR, twinspan_procs.tempdir("twinspan-stubs-"))
    from twinspan.v1 import serving_pb2, serving_pb2_grpc
    pb, pb_grpc = serving_pb2, serving_pb2_grpc


def curl(port, path, body=None, extra=()):
    """(status, body text) of one curl call."""
    args = ["curl", "-sS", "-N", "-o", "-", "-w", "\n%{http_code}", "--max-time", "120"]
    if body is not None:
        args += ["-H", "Content-Type: application/json", "--data-binary", "@-"]
    args += list(extra) + ["http://127.0.0.1:%d%s" % (port, path)]
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    out = subprocess.run(args, input=data, capture_output=True, check=True).stdout.decode()
    text, _, status = out.rpartition("\n")
    return int(status), text


def events(text):
    """The data payloads of a server-sent-event body, [DONE] included."""
    return [line[len("data: "):] for line in text.split("\n") if line.startswith("data: ")]


class HttpTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = twinspan_procs.tempdir("twinspan-http-")
        cls.cluster = twinspan_procs.Cluster(BINS, cls.work)
        c = cls.cluster
        common = ["--metrics", "127.0.0.1:0", "--threads", "1", "--context", "1024",
                  "--draft-timeout-ms", "5000", "--max-message-mb", "1"]
        try:
            cls.serve = c.start("serve", "serve", [
                "--model", os.path.join(MODELS, "target"), "--drafter-model",
                os.path.join(MODELS, "drafter"), "--listen", "127.0.0.1:0", "--http",
                "127.0.0.1:0", "--name", "serve"] + common)
            cls.target = c.start("target", "target", [
                "--model", os.path.join(MODELS, "target"), "--listen", "127.0.0.1:0",
                "--name", "target-plain"] + common)
            config = {"pools": [{"variant": "none", "weight": 1,
                                 "workers": [cls.target.address]}],
                      "health_interval_ms": 200, "http": "127.0.0.1:0"}
            path = os.path.join(cls.work, "router.json")
            with open(path, "w") as f:
                json.dump(config, f)
            cls.router = c.start("router", "router", [
                "--config", path, "--listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0",
                "--max-request-seconds", "1"])
        except Exception:
            c.stop_all()
            raise
        cls.port = cls.serve.http_port()
        cls.router_port = cls.router.http_port()
        cls.channel = grpc.insecure_channel(cls.serve.address)
        twinspan_procs.wait_ready(cls.channel)
        cls.stub = pb_grpc.ServingStub(cls.channel)

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        cls.cluster.stop_all()

    def post(self, path, body, port=None):
        status, text = curl(port or self.port, path, body)
        return status, json.loads(text)

    def test_health_and_models(self):
        self.assertEqual(curl(self.port, "/health"), (200, '{"status":"ok"}'))
        status, text = curl(self.port, "/v1/models")
        self.assertEqual(status, 200)
        models = json.loads(text)
        self.assertEqual(models["object"], "list")
        self.assertEqual([m["id"] for m in models["data"]], ["target"])
        self.assertEqual(models["data"][0]["max_model_len"], 1024)

    def test_completion_is_the_grpc_completion(self):
        status, body = self.post("/v1/completions", {
            "model": "target", "prompt": "def fibonacci(n):", "max_tokens": 24,
            "temperature": 0, "ignore_eos": True})
        self.assertEqual(status, 200, body)
        self.assertEqual(body["object"], "text_completion")
        self.assertEqual(body["usage"]["completion_tokens"], 24)
        self.assertEqual(body["choices"][0]["finish_reason"], "length")
        r = pb.GenerateRequest(prompt="def fibonacci(n):")
        r.sampling.max_tokens = 24
        r.sampling.ignore_eos = True
        text, final = "", None
        for m in self.stub.Generate(r, timeout=120):
            if m.HasField("chunk"):
                text += m.chunk.text
            else:
                final = m.final
        self.assertEqual(body["twinspan"]["token_sha256"], final.token_sha256)
        self.assertEqual(body["choices"][0]["text"], text)
        self.assertGreater(body["twinspan"]["accepted"], 0)  # the trained pair drafts

    def test_stream_equals_whole_and_ends_with_done(self):
        request = {"messages": [{"role": "user", "content": "Write a sort function"}],
                   "max_tokens": 20, "temperature": 0.8, "seed": 7,
                   "stream_options": {"include_usage": True}}
        status, whole = self.post("/v1/chat/completions", request)
        self.assertEqual(status, 200, whole)
        status, text = curl(self.port, "/v1/chat/completions", dict(request, stream=True))
        self.assertEqual(status, 200, text)
        payloads = events(text)
        self.assertEqual(payloads[-1], "[DONE]")
        chunks = [json.loads(p) for p in payloads[:-1]]
        self.assertEqual(chunks[0]["choices"][0]["delta"]["role"], "assistant")
        streamed = "".join(c["choices"][0]["delta"].get("content", "")
                           for c in chunks if c["choices"])
        self.assertEqual(streamed, whole["choices"][0]["message"]["content"])
        last = [c for c in chunks if c["choices"]][-1]
        self.assertEqual(last["choices"][0]["finish_reason"], whole["choices"][0]["finish_reason"])
        self.assertEqual(last["twinspan"]["token_sha256"], whole["twinspan"]["token_sha256"])
        self.assertEqual(chunks[-1]["usage"], whole["usage"])
        self.assertNotIn("<|im_end|>", streamed)  # the ending id's text is left out

    def test_errors_are_openai_shaped_with_the_grpc_code(self):
        cases = [
            (b"{bad", 400, "INVALID_ARGUMENT", "not valid JSON"),
            ({"prompt": "x", "max_tokens": 100000}, 400, "INVALID_ARGUMENT", "max_tokens"),
            ({"prompt": "x", "model": "gpt-4"}, 404, "NOT_FOUND", "gpt-4"),
            ({"prompt": "x", "n": 2}, 400, "INVALID_ARGUMENT", "`n`"),
            ({"prompt": "x", "temperature": "hot"}, 400, "INVALID_ARGUMENT", "`temperature`"),
            ({"prompt": "x", "guided_regex": "a(", "max_tokens": 4}, 400, "INVALID_ARGUMENT",
             "does not compile"),
            ({"prompt": "x", "guided_json": {"type": "integer", "minimum": 1}}, 400,
             "INVALID_ARGUMENT", "minimum"),
            ({"prompt": "x", "guided_regex": "a", "ignore_eos": True}, 400, "INVALID_ARGUMENT",
             "ignore_eos"),
            ({"prompt": "x" * (2 << 20)}, 413, "RESOURCE_EXHAUSTED", "--max-message-mb"),
        ]
        for body, want_status, want_code, want_text in cases:
            status, text = curl(self.port, "/v1/completions", body)
            self.assertEqual(status, want_status, text)
            error = json.loads(text)["error"]
            self.assertEqual(error["code"], want_code, text)
            self.assertIn(want_text, error["message"])
            self.assertIn("type", error)
        status, text = curl(self.port, "/v1/completions", extra=["-D", "-"])
        self.assertEqual(status, 405, text)
        self.assertIn("allow: post", text.lower())
        status, text = curl(self.port, "/health", b"{}")
        self.assertEqual(status, 405, text)
        status, text = curl(self.port, "/v1/nothing")
        self.assertEqual(status, 404)
        self.assertEqual(json.loads(text)["error"]["code"], "NOT_FOUND")

    def test_grpc_health_answers_the_service_name(self):
        def ident(b):
            return b
        name = b"twinspan.v1.Serving"
        for proc in (self.serve, self.target, self.router):
            with grpc.insecure_channel(proc.address) as channel:
                check = channel.unary_unary("/grpc.health.v1.Health/Check",
                                            request_serializer=ident, response_deserializer=ident)
                for request in (b"", b"\n" + bytes([len(name)]) + name):
                    self.assertEqual(check(request, timeout=5), b"\x08\x01", (proc.name, request))

    def test_a_prompt_over_the_context_is_400_context_length_exceeded(self):
        # OpenAI's answer, which SDKs do not retry; through the router the reason crosses gRPC.
        long = " ".join(["word"] * 1500)
        cases = [("/v1/completions", {"prompt": long, "max_tokens": 4}, "prompt"),
                 ("/v1/chat/completions",
                  {"messages": [{"role": "user", "content": long}], "max_tokens": 4}, "messages")]
        for port in (self.port, self.router_port):
            for path, body, param in cases:
                status, text = curl(port, path, body, extra=["-D", "-"])
                self.assertEqual(status, 400, text)
                self.assertNotIn("retry-after", text.lower())
                error = json.loads(text[text.index("{"):])["error"]
                self.assertEqual(error["code"], "context_length_exceeded", text)
                self.assertEqual(error["type"], "invalid_request_error", text)
                self.assertEqual(error["param"], param, text)
                self.assertIn("the limit is 1023", error["message"])
        status, text = curl(self.port, "/v1/completions", {"prompt": "x", "temperature": "hot"})
        self.assertEqual(json.loads(text)["error"]["param"], "temperature", text)

    def test_structured_output_parses_and_drafted_equals_plain(self):
        cases = [
            ({"response_format": {"type": "json_schema",
                                  "json_schema": {"name": "p", "schema": SCHEMA}}},
             lambda t: json.loads(t)["langs"] is not None),
            ({"guided_regex": r"(0|[1-9][0-9]{0,3})(, (0|[1-9][0-9]{0,3})){2,5}"},
             lambda t: re.fullmatch(r"(0|[1-9][0-9]{0,3})(, (0|[1-9][0-9]{0,3})){2,5}", t)),
            ({"guided_grammar": 'root ::= "def " name "(" name? "):"\nname ::= [a-z_]{1,12}\n'},
             lambda t: re.fullmatch(r"def [a-z_]{1,12}\(([a-z_]{1,12})?\):", t)),
            ({"guided_choice": ["python", "rust", "c++"]},
             lambda t: t in ("python", "rust", "c++")),
        ]
        for extra, check in cases:
            for temperature in (0.0, 0.9):
                base = {"messages": [{"role": "user", "content": "Describe a programmer"}],
                        "max_tokens": 96, "temperature": temperature, "seed": 11}
                base.update(extra)
                status, drafted = self.post("/v1/chat/completions", base)
                self.assertEqual(status, 200, drafted)
                status, plain = self.post("/v1/chat/completions", dict(base, draft=False))
                self.assertEqual(status, 200, plain)
                text = drafted["choices"][0]["message"]["content"]
                self.assertEqual(drafted["choices"][0]["finish_reason"], "stop", text)
                self.assertTrue(check(text), text)
                self.assertEqual(drafted["twinspan"]["token_sha256"],
                                 plain["twinspan"]["token_sha256"], (extra, temperature))
                self.assertEqual(plain["twinspan"]["drafted"], 0)
                if "response_format" in extra:
                    self.assertGreater(drafted["twinspan"]["drafted"], 0)

    def test_router_serves_http_with_the_same_tokens_and_its_deadline(self):
        request = {"prompt": "import numpy as np\n", "max_tokens": 16, "temperature": 0,
                   "ignore_eos": True}
        status, routed = self.post("/v1/completions", request, port=self.router_port)
        self.assertEqual(status, 200, routed)
        status, served = self.post("/v1/completions", request)
        self.assertEqual(status, 200, served)
        self.assertEqual(routed["twinspan"]["token_sha256"], served["twinspan"]["token_sha256"])
        self.assertEqual(routed["twinspan"]["head_variant"], "none")
        # --max-request-seconds 1 on the router: a long completion ends with 504 naming it.
        status, text = curl(self.router_port, "/v1/completions",
                            {"prompt": "x", "max_tokens": 1000, "ignore_eos": True})
        self.assertEqual(status, 504, text)
        self.assertIn("--max-request-seconds", json.loads(text)["error"]["message"])

    def test_a_client_that_leaves_mid_stream_frees_its_stream(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        conn.request("POST", "/v1/completions", json.dumps(
            {"prompt": "x", "max_tokens": 1000, "ignore_eos": True, "stream": True}),
            {"Content-Type": "application/json"})
        response = conn.getresponse()
        self.assertEqual(response.status, 200)
        response.read1(64)
        conn.close()  # the socket goes away after the first event
        deadline = time.time() + 20
        while time.time() < deadline:
            load = self.stub.GetLoad(pb.GetLoadRequest(), timeout=5)
            if load.running == 0:
                break
            time.sleep(0.1)
        self.assertEqual(load.running, 0, "the request kept running after its client left")
        with open(self.serve.log_path) as f:
            self.assertIn("http client went away", f.read())

    def test_the_official_openai_client(self):
        if not os.path.isdir(OPENAI_PACKAGE):
            self.fail("the npm openai package is not installed at %r" % OPENAI_PACKAGE)
        out = subprocess.run(["node", NODE_CHECK, OPENAI_PACKAGE,
                              "http://127.0.0.1:%d/v1" % self.port],
                             capture_output=True, text=True, timeout=300)
        self.assertEqual(out.returncode, 0, out.stderr)
        result = json.loads(out.stdout.strip().splitlines()[-1])
        self.assertEqual(result["models"], ["target"])
        self.assertEqual(result["whole_sha"], result["stream_sha"])
        self.assertEqual(result["whole_text"], result["stream_text"])
        self.assertEqual(result["stream_usage"]["completion_tokens"], 16)
        self.assertEqual(sorted(result["structured"]), ["n", "name"])
        self.assertEqual(result["error"], "BadRequestError 400 INVALID_ARGUMENT")


if __name__ == "__main__":
    unittest.main()
