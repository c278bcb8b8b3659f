import hashlib
import io
import json
import os
import socket
import tempfile
import unittest

from twinspan_bench import cli, client, stubs
from twinspan_bench.model import GREEDY, GenRequest, sampled
from twinspan_bench.prompts import builtin_prompts

from tests.fake_serving import FakeServingForBenchTests

STUBS = os.environ.get("TWINSPAN_BENCH_STUBS") or tempfile.mkdtemp(prefix="bench-stubs-")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class StubsTest(unittest.TestCase):
    def test_generated_once_per_proto_content(self):
        folder = stubs.generate(STUBS)
        self.assertTrue(os.path.isfile(os.path.join(folder, "twinspan", "v1", "serving_pb2.py")))
        self.assertEqual(stubs.generate(STUBS), folder)

    def test_missing_protos_are_a_clear_error(self):
        old = os.environ.get("TWINSPAN_PROTO_DIR")
        os.environ["TWINSPAN_PROTO_DIR"] = tempfile.mkdtemp()
        try:
            with self.assertRaisesRegex(OSError, "no twinspan/v1/\\*.proto"):
                stubs.generate(STUBS)
        finally:
            if old is None:
                del os.environ["TWINSPAN_PROTO_DIR"]
            else:
                os.environ["TWINSPAN_PROTO_DIR"] = old


class IdsHashTest(unittest.TestCase):
    def test_little_endian_uint32(self):
        self.assertEqual(client.ids_sha256([1, 258]),
                         hashlib.sha256(b"\x01\x00\x00\x00\x02\x01\x00\x00").hexdigest())


class GrpcBackendTest(unittest.TestCase):
    def setUp(self):
        self.server = FakeServingForBenchTests(STUBS)
        self.backend = client.GrpcBackend(self.server.address, timeout_s=30, stubs_dir=STUBS)

    def tearDown(self):
        self.backend.close()
        self.server.stop()

    def test_request_carries_every_field(self):
        chat, code = builtin_prompts()["chat"], builtin_prompts()["code"]
        r = self.backend.generate(GenRequest(chat, sampled(0.6), max_tokens=9, seed=77,
                                             draft=False, variant="full"))
        self.assertTrue(r.ok, r.error)
        sent = self.server.requests[-1]
        self.assertEqual(sent.WhichOneof("input"), "chat")
        self.assertEqual([(m.role, m.content) for m in sent.chat.messages], list(chat.messages))
        s = sent.sampling
        self.assertEqual((s.max_tokens, s.top_k, s.seed.value, s.ignore_eos), (9, 20, 77, True))
        self.assertAlmostEqual(s.temperature, 0.6, places=6)
        self.assertAlmostEqual(s.top_p, 0.95, places=6)
        self.assertTrue(s.HasField("draft"))
        self.assertFalse(s.draft.value)
        self.assertEqual(sent.head_variant, "full")
        self.backend.generate(GenRequest(code, GREEDY, max_tokens=4, seed=1))
        sent = self.server.requests[-1]
        self.assertEqual(sent.prompt, code.text)
        self.assertEqual((sent.sampling.temperature, sent.sampling.draft.value), (0.0, True))
        self.assertEqual(sent.head_variant, "")

    def test_result_reads_chunks_and_final(self):
        r = self.backend.generate(GenRequest(builtin_prompts()["code"], GREEDY, 12, seed=5))
        self.assertTrue(r.ok, r.error)
        self.assertEqual([n for _, n in r.chunks], [1, 3, 1, 2, 4, 1])
        self.assertEqual((r.completion_tokens, r.rounds, r.accepted, r.drafted), (12, 5, 6, 15))
        self.assertEqual(r.round_tokens, [3, 1, 2, 4, 1])
        self.assertEqual((r.variant, r.finish_reason), ("two-span", "FINISH_REASON_LENGTH"))
        self.assertEqual(len(r.token_sha256), 64)
        self.assertAlmostEqual(r.server["timings"]["total_seconds"], 0.01)
        self.assertLess(r.t_send, r.chunks[0][0])
        self.assertLessEqual(r.chunks[-1][0], r.t_end)

    def test_hash_that_does_not_match_the_ids_fails_the_request(self):
        self.server.lie_about_hash = True
        r = self.backend.generate(GenRequest(builtin_prompts()["code"], GREEDY, 8, seed=5))
        self.assertFalse(r.ok)
        self.assertIn("token_sha256 does not match", r.error)

    def test_short_reply_fails_the_request(self):
        self.server.stop_after = 5
        r = self.backend.generate(GenRequest(builtin_prompts()["code"], GREEDY, 8, seed=5))
        self.assertFalse(r.ok)
        self.assertIn("finished by FINISH_REASON_EOS after 5 tokens (want 8", r.error)

    def test_structured_output_request_ends_at_eos_and_must_parse(self):
        json_prompt = builtin_prompts()["json"]
        self.server.stop_after = 5
        self.server.text_of = lambda start, n: '{"a": 1}' if start == 0 else ""
        r = self.backend.generate(GenRequest(json_prompt, GREEDY, 8, seed=5, ignore_eos=False))
        self.assertTrue(r.ok, r.error)
        sent = self.server.requests[-1]
        self.assertEqual(sent.structured_output.json_schema, json_prompt.json_schema)
        self.assertFalse(sent.sampling.ignore_eos)
        self.server.text_of = lambda start, n: "{"
        r = self.backend.generate(GenRequest(json_prompt, GREEDY, 8, seed=5, ignore_eos=False))
        self.assertFalse(r.ok)
        self.assertIn("does not parse as JSON", r.error)
        self.server.stop_after = None
        r = self.backend.generate(GenRequest(json_prompt, GREEDY, 8, seed=5, ignore_eos=False))
        self.assertFalse(r.ok)
        self.assertIn("not by EOS (raise --tokens)", r.error)

    def test_grpc_error_fails_the_request(self):
        self.server.fail_seeds = {9}
        r = self.backend.generate(GenRequest(builtin_prompts()["code"], GREEDY, 8, seed=9))
        self.assertFalse(r.ok)
        self.assertEqual(r.error, "UNAVAILABLE: planted failure")

    def test_model_info(self):
        self.assertEqual(self.backend.model_info(5)["model_name"], "fake-for-bench-tests")


class EndToEndTest(unittest.TestCase):
    def test_bench_against_the_fake_server(self):
        server = FakeServingForBenchTests(STUBS)
        out, err = io.StringIO(), io.StringIO()
        report = os.path.join(tempfile.mkdtemp(), "r.json")
        try:
            code = cli.main(["--target", server.address, "--stubs-dir", STUBS, "--levels", "1,3",
                             "--tokens", "10", "--reps", "2", "--alone", "--serial", "--strict",
                             "--report", report], out=out, err=err)
        finally:
            server.stop()
        self.assertEqual(code, 0, err.getvalue())
        with open(report, encoding="utf-8") as f:
            data = json.load(f)
        self.assertEqual(data["meta"]["model"]["model_name"], "fake-for-bench-tests")
        self.assertEqual(len(data["cells"]), 8)
        self.assertEqual(data["totals"]["alone"], {"equal": 24, "unequal": 0, "failed": 0})
        self.assertEqual(data["totals"]["serial"]["equal"], 16)
        c3 = [c for c in data["cells"] if c["cell"] == "code/sampled/c3"][0]
        # Rounds of 3, 1, 2 and (cut by max_tokens) 3 ids after the prefill's one.
        self.assertEqual(c3["tokens_per_round"], 9 / 4)
        self.assertEqual(c3["variants_seen"], ["two-span"])

    def test_prompt_that_does_not_fit_the_context_is_refused_before_any_cell(self):
        server = FakeServingForBenchTests(STUBS)
        server.max_context = len(builtin_prompts()["code"].text) + 15
        err = io.StringIO()
        try:
            code = cli.main(["--target", server.address, "--stubs-dir", STUBS, "--cells", "code",
                             "--tokens", "16"], out=io.StringIO(), err=err)
            self.assertEqual(server.requests, [])
            self.assertEqual(code, 2)
            self.assertIn("prompt 'code' has", err.getvalue())
            self.assertIn("exceeds the model's max_context", err.getvalue())
            code = cli.main(["--target", server.address, "--stubs-dir", STUBS, "--cells", "code",
                             "--modes", "greedy", "--levels", "1", "--reps", "1", "--tokens", "15"],
                            out=io.StringIO(), err=io.StringIO())
            self.assertEqual(code, 0)
        finally:
            server.stop()

    def test_no_server_exits_2_with_a_clear_message(self):
        err = io.StringIO()
        code = cli.main(["--target", f"127.0.0.1:{free_port()}", "--stubs-dir", STUBS,
                         "--connect-timeout", "0.5", "--levels", "1"], out=io.StringIO(), err=err)
        self.assertEqual(code, 2)
        self.assertIn("no answer from 127.0.0.1:", err.getvalue())


if __name__ == "__main__":
    unittest.main()
