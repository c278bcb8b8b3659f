import io
import json
import os
import tempfile
import unittest

from twinspan_bench import cli, prompts, runner
from twinspan_bench.model import GREEDY, sampled
from twinspan_bench.prompts import builtin_prompts

from tests.fake_backend import FakeBackendForBenchTests


def run_main(argv, backend):
    """cli.main with the fake backend; returns (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(argv, backend_factory=lambda args: backend, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


class RunTogetherTest(unittest.TestCase):
    def test_streams_are_in_flight_together(self):
        backend = FakeBackendForBenchTests()
        prompt = builtin_prompts()["code"]
        reqs = [runner.Runner(backend, runner.RunOptions(tokens=8)).request(prompt, GREEDY, s, "")
                for s in range(8)]
        results = runner.run_together(backend, reqs)
        self.assertEqual(backend.max_in_flight, 8)
        self.assertTrue(all(r.ok for r in results))

    def test_a_raising_backend_gives_failed_results(self):
        class Broken:
            def generate(self, req):
                raise RuntimeError("boom")
        results = runner.run_together(Broken(), [None, None])
        self.assertEqual([r.ok for r in results], [False, False])
        self.assertIn("boom", results[0].error)


class CellsTest(unittest.TestCase):
    def run_cells(self, backend, levels=(1, 2, 4), reps=2, **opts):
        options = runner.RunOptions(tokens=16, reps=reps, warmup=1, warmup_tokens=2, **opts)
        r = runner.Runner(backend, options)
        cells = []
        r.run(builtin_prompts()["code"], sampled(0.6), list(levels), [""], cells.append)
        return r, cells

    def test_exact_backend_counts_every_check_equal(self):
        r, cells = self.run_cells(FakeBackendForBenchTests(), alone=True, serial=True)
        by_level = {c["record"]["level"]: c["record"] for c in cells}
        self.assertEqual(sorted(by_level), [1, 2, 4])
        # alone: every reply of every rep at levels above 1; serial: one per stream's seed.
        self.assertEqual(by_level[4]["exact"]["alone"], {"equal": 8, "unequal": 0, "failed": 0})
        self.assertEqual(by_level[1]["exact"]["alone"], {"equal": 0, "unequal": 0, "failed": 0})
        self.assertEqual(by_level[4]["exact"]["serial"], {"equal": 4, "unequal": 0, "failed": 0})
        self.assertEqual(by_level[4]["exact"]["repeat"], {"equal": 4, "unequal": 0, "failed": 0})
        # References: 4 seeds draft:false, 4 seeds drafted solo.
        self.assertEqual(len(r.references), 8)
        self.assertEqual(by_level[4]["requests"], 8)
        self.assertGreater(by_level[4]["tokens_per_round"], 1.0)
        self.assertTrue(all(not c["findings"] for c in cells))

    def test_concurrency_bug_is_unequal_only_above_one_stream(self):
        backend = FakeBackendForBenchTests()
        backend.concurrency_bug = True
        _, cells = self.run_cells(backend, alone=True)
        by_level = {c["record"]["level"]: c for c in cells}
        self.assertEqual(by_level[2]["record"]["exact"]["alone"]["unequal"], 4)
        self.assertEqual(by_level[1]["record"]["exact"]["repeat"]["unequal"], 0)
        finding = by_level[2]["findings"][0]
        self.assertEqual(finding["check"], "alone")
        self.assertNotEqual(finding["got"], finding["want"])

    def test_draft_bug_is_caught_by_serial(self):
        backend = FakeBackendForBenchTests()
        backend.draft_bug = True
        _, cells = self.run_cells(backend, levels=(1, 2), serial=True)
        self.assertEqual(cells[-1]["record"]["exact"]["serial"]["unequal"], 2)

    def test_repeat_bug_is_caught_by_repeat(self):
        backend = FakeBackendForBenchTests()
        backend.repeat_bug = True
        _, cells = self.run_cells(backend, levels=(1,), reps=3)
        self.assertEqual(cells[0]["record"]["exact"]["repeat"]["unequal"], 2)

    def test_failed_requests_count_as_failed_comparisons(self):
        backend = FakeBackendForBenchTests()
        backend.fail_seeds = {1235}  # stream 1
        _, cells = self.run_cells(backend, levels=(2,), alone=True)
        record = cells[0]["record"]
        self.assertEqual(record["failed"], 2)
        self.assertEqual(record["exact"]["alone"]["failed"], 2)
        self.assertEqual(record["exact"]["repeat"]["failed"], 1)

    def test_greedy_streams_share_ids_and_sampled_streams_do_not(self):
        backend = FakeBackendForBenchTests()
        r = runner.Runner(backend, runner.RunOptions(tokens=8, reps=1, warmup=0))
        got = {}
        for mode in (GREEDY, sampled(0.6)):
            r.run(builtin_prompts()["code"], mode, [2], [""], lambda c: got.update({mode.mode: c}))
        hashes = lambda c: {e["token_sha256"] for e in c["evidence"]}
        self.assertEqual(len(hashes(got["greedy"])), 1)
        self.assertEqual(len(hashes(got["sampled"])), 2)
        self.assertEqual([e["seed"] for e in got["sampled"]["evidence"]], [1234, 1235])


class CommandLineTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()

    def path(self, name):
        return os.path.join(self.dir, name)

    def test_outputs_jsonl_report_table_and_plot(self):
        argv = ["--levels", "1,2", "--tokens", "12", "--reps", "2", "--alone", "--serial",
                "--variant", "two-span,full", "--jsonl", self.path("c.jsonl"),
                "--report", self.path("r.json"), "--plot", self.path("p.png")]
        code, out, err = run_main(argv, FakeBackendForBenchTests())
        self.assertEqual(code, 0, err)
        lines = read(self.path("c.jsonl")).splitlines()
        # 2 prompts x 2 modes x 2 variants x 2 levels.
        self.assertEqual(len(lines), 16)
        first = json.loads(lines[0])
        self.assertEqual(first["cell"], "code/greedy/c1/two-span")
        report = json.loads(read(self.path("r.json")))
        self.assertEqual(len(report["cells"]), 16)
        self.assertEqual(len(report["requests"]), 2 * 2 * 2 * (1 + 2) * 2)
        self.assertEqual(report["totals"]["alone"]["unequal"], 0)
        self.assertEqual(report["meta"]["options"]["variants"], ["two-span", "full"])
        self.assertIn("| chat/sampled/c2/full ", out)
        self.assertIn("tok/round", out)
        self.assertIn("alone 32/0/0, serial 24/0/0, repeat 24/0/0", err)
        with open(self.path("p.png"), "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")

    def test_strict_exit_code_on_unequal_and_zero_without_strict(self):
        backend = FakeBackendForBenchTests()
        backend.concurrency_bug = True
        argv = ["--cells", "code", "--modes", "greedy", "--levels", "1,2", "--tokens", "8",
                "--reps", "1", "--alone", "--quiet"]
        self.assertEqual(run_main(argv, backend)[0], 0)
        self.assertEqual(run_main(argv + ["--strict"], backend)[0], 1)
        self.assertEqual(run_main(argv + ["--strict"], FakeBackendForBenchTests())[0], 0)

    def test_strict_exit_code_on_failed_request(self):
        backend = FakeBackendForBenchTests()
        backend.fail_seeds = {1234}
        argv = ["--cells", "code", "--modes", "greedy", "--levels", "1", "--tokens", "8",
                "--reps", "1", "--quiet", "--strict"]
        self.assertEqual(run_main(argv, backend)[0], 1)

    def test_require_drafter_waits_for_the_drafter_then_gives_up(self):
        backend = FakeBackendForBenchTests()
        backend.drafter_after = 3
        argv = ["--cells", "code", "--modes", "greedy", "--levels", "1", "--tokens", "4",
                "--reps", "1", "--quiet", "--require-drafter"]
        self.assertEqual(run_main(argv, backend)[0], 0)
        self.assertEqual(backend.model_info_calls, 4)
        backend = FakeBackendForBenchTests()
        backend.drafter_after = 10 ** 6
        code, _, err = run_main(argv + ["--connect-timeout", "0.5"], backend)
        self.assertEqual(code, 2)
        self.assertIn("no drafter connected after 0.5 s", err)
        self.assertEqual(backend.calls, [])

    def test_no_draft_runs_the_cells_plain_but_keeps_drafted_references(self):
        backend = FakeBackendForBenchTests()
        argv = ["--cells", "code", "--modes", "greedy", "--levels", "2", "--tokens", "6",
                "--reps", "1", "--warmup", "0", "--quiet", "--alone", "--no-draft", "--jsonl", "-"]
        code, out, _ = run_main(argv, backend)
        self.assertEqual(code, 0)
        record = json.loads(out.splitlines()[0])
        self.assertEqual((record["draft"], record["tokens_per_round"], record["drafted"]),
                         (False, 1.0, 0))
        # Two drafted solo references, then the cell's two plain streams.
        self.assertEqual([r.draft for r in backend.calls], [True, True, False, False])

    def test_long_functions_sets_the_long_prompt_size(self):
        args = cli.build_parser().parse_args(["--cells", "long", "--long-functions", "5"])
        short = cli.select_prompts(args)[0].text
        self.assertLess(len(short), 1500)
        self.assertTrue(prompts.long_code_prompt().startswith(short[:-200]))

    def test_jsonl_on_stdout(self):
        argv = ["--cells", "chat", "--modes", "sampled", "--levels", "2", "--tokens", "8",
                "--reps", "1", "--jsonl", "-"]
        code, out, _ = run_main(argv, FakeBackendForBenchTests())
        self.assertEqual(code, 0)
        self.assertEqual(json.loads(out.splitlines()[0])["cell"], "chat/sampled/c2")

    def test_context_copy_both_runs_each_cell_with_and_without(self):
        backend = FakeBackendForBenchTests()
        argv = ["--cells", "edit", "--modes", "greedy", "--levels", "1", "--tokens", "8",
                "--reps", "1", "--warmup", "0", "--context-copy", "both", "--jsonl", "-"]
        code, out, _ = run_main(argv, backend)
        self.assertEqual(code, 0)
        cells = [json.loads(line) for line in out.splitlines()]
        self.assertEqual([c["cell"] for c in cells], ["edit/greedy/c1", "edit/greedy/c1/nocopy"])
        self.assertEqual([c["context_copy"] for c in cells], [True, False])
        self.assertEqual([c["copy_accepted"] for c in cells], [2, 0])
        self.assertEqual(cells[0]["drafter_accepted"], cells[0]["accepted"] - 2)
        self.assertEqual([r.context_copy for r in backend.calls], [True, False])
        self.assertIn("combine_all is removed", backend.calls[0].prompt.text)

    def test_prefix_cell_times_fresh_against_resumed_prompts(self):
        backend = FakeBackendForBenchTests()
        argv = ["--cells", "prefix", "--tokens", "4", "--reps", "2", "--prefix-tokens", "512",
                "--prefix-suffix", "16", "--jsonl", self.path("p.jsonl")]
        code, out, err = run_main(argv, backend)
        self.assertEqual(code, 0, err)
        record = json.loads(read(self.path("p.jsonl")))
        self.assertEqual(record["cell"], "prefix/greedy/c1")
        self.assertEqual((record["cached_prompt_tokens"], record["fresh_cached_prompt_tokens"]),
                         (512, 0))
        self.assertGreater(record["ttft_speedup"], 1.0)
        self.assertEqual(record["exact"]["repeat"], {"equal": 1, "unequal": 0, "failed": 0})
        # Warm-up, two fresh and two resumed prompts, the warm-up's prompt again.
        self.assertEqual(len(backend.calls), 6)
        self.assertEqual(backend.calls[0].prompt.ids, backend.calls[-1].prompt.ids)
        self.assertIn("TTFT resumed ms", out)
        code, _, err = run_main(argv + ["--prefix-tokens", "5000"], backend)
        self.assertEqual(code, 2)
        self.assertIn("max_context 4096", err)

    def test_bad_arguments_exit_2_before_connecting(self):
        def no_backend(args):
            raise AssertionError("must not connect")
        for argv in (["--cells", "nope"], ["--modes", "beam"], ["--prompts", self.path("none")],
                     ["--modes", "sampled", "--temperature", "0"]):
            err = io.StringIO()
            self.assertEqual(cli.main(argv, backend_factory=no_backend, err=err), 2, argv)
            self.assertIn("twinspan-bench: ", err.getvalue())


if __name__ == "__main__":
    unittest.main()
