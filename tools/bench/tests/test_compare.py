import json
import os
import tempfile
import unittest

from twinspan_bench import compare, report


def cell(prompt="code", mode="greedy", level=1, variant="", tok_s=100.0, tpr=2.0, unequal=0):
    tally = {"equal": 1, "unequal": unequal, "failed": 0}
    return {"cell": f"{prompt}/{mode}/c{level}", "prompt": prompt, "mode": mode, "level": level,
            "variant": variant, "decode_tok_s": tok_s, "aggregate_tok_s": tok_s * level,
            "ttft_s": 0.05, "tokens_per_round": tpr,
            "exact": {"alone": tally, "serial": tally, "repeat": tally}}


def rows(table: str) -> list:
    return [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()[2:]]


class CompareTest(unittest.TestCase):
    def test_change_percent(self):
        self.assertAlmostEqual(compare.change_percent(100.0, 125.0), 25.0)
        self.assertAlmostEqual(compare.change_percent(200.0, 150.0), -25.0)
        self.assertIsNone(compare.change_percent(0.0, 1.0))
        self.assertIsNone(compare.change_percent(None, 1.0))
        self.assertEqual(compare.fmt_change(12.345), "+12.3%")

    def test_before_after_matches_cells_and_shows_change(self):
        a = [cell(tok_s=100.0, tpr=2.0), cell(level=2, tok_s=80.0)]
        b = [cell(tok_s=150.0, tpr=3.0), cell(mode="sampled", tok_s=50.0, unequal=1)]
        table = rows(compare.compare_table(a, b))
        self.assertEqual(table[0][:4], ["code/greedy/c1", "100.0", "150.0", "+50.0%"])
        self.assertEqual(table[0][10:13], ["2.00", "3.00", "+50.0%"])
        self.assertEqual(table[1][1:4], ["80.0", "(absent)", "-"])
        self.assertEqual(table[2][0], "code/sampled/c1")
        self.assertEqual(table[2][-2:], ["(absent)", "✗"])

    def test_variant_against_variant_matches_without_the_variant(self):
        a = [cell(variant="full", tpr=2.0)]
        b = [cell(variant="two-span", tpr=2.5)]
        table = rows(compare.compare_table(a, b, "full", "two-span"))
        self.assertEqual(len(table), 1)
        self.assertEqual(table[0][10:13], ["2.00", "2.50", "+25.0%"])

    def test_runs_with_several_variants_match_by_variant(self):
        a = [cell(variant="full"), cell(variant="two-span")]
        table = rows(compare.compare_table(a, [cell(variant="two-span", tok_s=110.0)]))
        self.assertEqual([r[0] for r in table], ["code/greedy/c1/full", "code/greedy/c1/two-span"])
        self.assertEqual(table[1][3], "+10.0%")


class LoadCellsTest(unittest.TestCase):
    def write(self, text):
        fd, path = tempfile.mkstemp()
        with os.fdopen(fd, "w") as f:
            f.write(text)
        return path

    def test_reads_reports_and_json_lines(self):
        cells = [cell(), cell(level=2)]
        self.assertEqual(report.load_cells(self.write(json.dumps({"cells": cells}))), cells)
        self.assertEqual(report.load_cells(self.write("\n".join(map(json.dumps, cells)))), cells)
        self.assertEqual(report.load_cells(self.write(json.dumps(cells[0]))), cells[:1])

    def test_rejects_what_is_not_bench_output(self):
        with self.assertRaisesRegex(ValueError, ":2: neither a report nor JSON lines"):
            report.load_cells(self.write('{"a": 1}\n{oops\n'))
        with self.assertRaisesRegex(ValueError, "not a twinspan-bench output"):
            report.load_cells(self.write('{"a": 1}\n'))
        with self.assertRaisesRegex(ValueError, "no cells"):
            report.load_cells(self.write(json.dumps({"cells": []})))


if __name__ == "__main__":
    unittest.main()
