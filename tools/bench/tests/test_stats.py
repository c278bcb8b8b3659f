import unittest

from twinspan_bench import stats
from twinspan_bench.model import GenResult


def result(t_send, chunks, **kw) -> GenResult:
    return GenResult(ok=True, t_send=t_send, t_end=chunks[-1][0] if chunks else t_send,
                     chunks=chunks, **kw)


class RequestMetricsTest(unittest.TestCase):
    def test_ttft_decode_speed_and_round_gaps(self):
        # Prefill token at 0.5 s, then rounds of 3, 2 and 3 ids every 0.1 s.
        r = result(10.0, [(10.5, 1), (10.6, 3), (10.7, 2), (10.8, 3)])
        m = stats.request_metrics(r)
        self.assertAlmostEqual(m["ttft_s"], 0.5)
        self.assertAlmostEqual(m["decode_tok_s"], 8 / 0.3)
        self.assertEqual(len(m["round_gaps_s"]), 3)
        for gap in m["round_gaps_s"]:
            self.assertAlmostEqual(gap, 0.1)

    def test_failed_or_single_message_requests_give_no_speed(self):
        self.assertIsNone(stats.request_metrics(GenResult(ok=False))["ttft_s"])
        m = stats.request_metrics(result(0.0, [(0.2, 1)]))
        self.assertAlmostEqual(m["ttft_s"], 0.2)
        self.assertIsNone(m["decode_tok_s"])


class CellSummaryTest(unittest.TestCase):
    def test_tokens_per_round_uses_emitted_ids_per_verify_round(self):
        a = result(0.0, [(0.1, 1), (0.2, 4), (0.3, 4)], rounds=2, accepted=6, drafted=14,
                   round_tokens=[4, 4], completion_tokens=9)
        b = result(0.0, [(0.1, 1), (0.2, 2), (0.3, 1)], rounds=2, accepted=1, drafted=14,
                   round_tokens=[2, 1], completion_tokens=4)
        s = stats.cell_summary([[a, b]])
        self.assertAlmostEqual(s["tokens_per_round"], 11 / 4)
        self.assertAlmostEqual(s["acceptance_rate"], 7 / 28)
        self.assertEqual(s["round_tokens_hist"], {"1": 1, "2": 1, "4": 2})
        self.assertEqual((s["drafted"], s["accepted"], s["rounds"]), (28, 7, 4))

    def test_tokens_per_round_without_per_round_list_is_one_plus_accepted_per_round(self):
        a = result(0.0, [(0.1, 1), (0.2, 3)], rounds=1, accepted=2, drafted=3)
        self.assertAlmostEqual(stats.cell_summary([[a]])["tokens_per_round"], 3.0)

    def test_plain_decoding_is_one_token_per_round(self):
        a = result(0.0, [(0.1, 1), (0.2, 1), (0.3, 1)], rounds=2, round_tokens=[1, 1])
        s = stats.cell_summary([[a]])
        self.assertEqual(s["tokens_per_round"], 1.0)
        self.assertIsNone(s["acceptance_rate"])

    def test_medians_over_reps_and_aggregate_over_wall_time(self):
        reps = []
        for speed in (100.0, 200.0, 300.0):
            # Two streams, each 11 tokens: prefill at 0.1 s, then 10 ids over 10 / speed seconds.
            reps.append([result(0.0, [(0.1, 1), (0.1 + 10 / speed, 10)], completion_tokens=11)
                         for _ in range(2)])
        s = stats.cell_summary(reps)
        self.assertAlmostEqual(s["decode_tok_s"], 200.0)
        self.assertAlmostEqual(s["decode_tok_s_min"], 100.0)
        self.assertAlmostEqual(s["aggregate_tok_s"], 22 / (0.1 + 10 / 200.0))
        self.assertAlmostEqual(s["ttft_s"], 0.1)
        self.assertEqual(s["failed"], 0)

    def test_server_timings_are_medians_of_what_the_server_reported(self):
        reps = [[result(0.0, [(0.1, 1)], server={"timings": {"first_token_seconds": t}})
                 for t in (0.01, 0.03, 0.02)], [result(0.0, [(0.1, 1)])]]
        s = stats.cell_summary(reps)
        self.assertAlmostEqual(s["server_ttft_s"], 0.02)
        self.assertIsNone(s["server_queue_s"])

    def test_failed_requests_are_counted_not_averaged(self):
        ok = result(0.0, [(0.1, 1), (0.2, 1)], completion_tokens=2)
        s = stats.cell_summary([[ok, GenResult(ok=False, error="x")]])
        self.assertEqual((s["requests"], s["failed"]), (2, 1))
        self.assertAlmostEqual(s["aggregate_tok_s"], 2 / 0.2)

    def test_median_skips_missing(self):
        self.assertIsNone(stats.median([None, None]))
        self.assertEqual(stats.median([3, None, 1, 2]), 2)


if __name__ == "__main__":
    unittest.main()
