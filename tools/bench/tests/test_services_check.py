import io
import os
import sys
import unittest
from contextlib import redirect_stderr, redirect_stdout

import services_check

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE = f"{sys.executable} {os.path.join(HERE, 'fake_service_main.py')}"
BENCH = os.path.join(os.path.dirname(HERE), "twinspan-bench")
SMALL = "--quiet --cells code --modes greedy --levels 1,2 --tokens 8 --reps 2 --warmup 0 --alone --serial"


def run(argv):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = services_check.main(argv)
    return code, out.getvalue(), err.getvalue()


class ServicesCheckTest(unittest.TestCase):
    def test_passes_on_an_exact_server_and_stops_it(self):
        code, out, err = run(["--service", f"fake={FAKE}", "--bench", BENCH, "--bench-args", SMALL])
        self.assertEqual(code, 0, err)
        self.assertIn("exactness alone 4/0/0, serial 3/0/0, repeat 3/0/0", out)

    def test_fails_a_mode_below_its_tokens_per_round_floor(self):
        # The fake server's rounds emit 1.75 tokens: a floor of 1.5 passes (one for a mode the
        # cells do not run is ignored) and 2 fails.
        code, out, err = run(["--service", f"fake={FAKE}", "--bench", BENCH, "--bench-args", SMALL,
                              "--min-tokens-per-round", "greedy=1.5", "--min-tokens-per-round", "sampled=9"])
        self.assertEqual(code, 0, err)
        self.assertIn("tokens per round code/greedy/c1 1.75", out)
        code, _, err = run(["--service", f"fake={FAKE}", "--bench", BENCH, "--bench-args", SMALL,
                            "--min-tokens-per-round", "greedy=2"])
        self.assertEqual(code, 1)
        self.assertIn("tokens per round 1.75 (floor 2)", err)

    def test_fails_when_replies_do_not_prove_themselves(self):
        code, _, err = run(["--service", f"fake={FAKE} --lie-about-hash", "--bench", BENCH,
                            "--bench-args", SMALL])
        self.assertEqual(code, 1)
        self.assertIn("requests failed", err)

    def test_fails_with_the_log_when_a_service_never_listens(self):
        code, _, err = run(["--service", f"mute={sys.executable} -c \"print('starting')\"",
                            "--bench", BENCH, "--startup-timeout", "10"])
        self.assertEqual(code, 1)
        self.assertIn("did not announce", err)
        self.assertIn("starting", err)

    def test_run_and_write_steps_happen_in_order_in_the_work_folder(self):
        code, _, err = run(["--run", f"{sys.executable} -c \"open('{{work}}/made', 'w')\"",
                            "--write", "cfg.json={\"peer\": \"{first}\"}",
                            "--service", f"first={FAKE}",
                            "--write", "cfg2.json={first}",
                            "--service", f"second={FAKE} --peer-file {{work}}/cfg2.json "
                            f"--need {{work}}/made", "--bench", BENCH, "--bench-args", SMALL])
        self.assertEqual(code, 0, err)
        code, _, err = run(["--run", f"{sys.executable} -c \"raise SystemExit(3)\"",
                            "--service", f"first={FAKE}", "--bench", BENCH])
        self.assertEqual(code, 1)
        self.assertIn("exited 3", err)

    def test_later_commands_get_earlier_addresses(self):
        code, _, err = run(["--service", f"first={FAKE}",
                            "--service", f"second={FAKE} --peer {{first}}", "--bench", BENCH,
                            "--bench-args", SMALL])
        self.assertEqual(code, 0, err)
        code, _, err = run(["--service", f"first={FAKE}",
                            "--service", f"second={FAKE} --peer {{other}}", "--bench", BENCH,
                            "--bench-args", SMALL, "--startup-timeout", "10"])
        self.assertEqual(code, 1)
        self.assertIn("--peer wants 127.0.0.1:<port>, got '{other}'", err)


if __name__ == "__main__":
    unittest.main()
