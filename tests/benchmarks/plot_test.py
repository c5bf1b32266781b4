"""Tests of benchmarks/plot/weft-plot on sample outputs (nccl-tests' own,
an older nccl-tests layout, and weft's). Usage: plot_test.py <weft-plot> <samples dir>"""

import importlib.machinery
import importlib.util
import io
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

PLOT, SAMPLES = sys.argv[1], sys.argv[2]
loader = importlib.machinery.SourceFileLoader("weft_plot", PLOT)
spec = importlib.util.spec_from_loader("weft_plot", loader)
weft_plot = importlib.util.module_from_spec(spec)
loader.exec_module(weft_plot)


def sample(name):
    return os.path.join(SAMPLES, name)


class ParserTest(unittest.TestCase):
    def test_nccl_tests_output(self):
        parsed = weft_plot.parse_file(sample("nccl_tests_all_reduce.txt"))
        self.assertEqual(parsed["test"], "all_reduce_perf")
        self.assertEqual(parsed["oob"], 0)
        self.assertAlmostEqual(parsed["avg_busbw"], 277.362)
        self.assertEqual(len(parsed["rows"]), 5)
        first = parsed["rows"][0]
        self.assertEqual((first["size"], first["count"], first["type"], first["redop"], first["root"]),
                         (1048576, 262144, "float", "sum", -1))
        self.assertEqual(first["out"], {"time": 25.10, "algbw": 41.78, "busbw": 73.11, "wrong": 0})
        self.assertAlmostEqual(parsed["rows"][-1]["in"]["busbw"], 389.67)

    def test_old_layout_without_root_column(self):
        parsed = weft_plot.parse_file(sample("nccl_tests_old_format.txt"))
        self.assertEqual(len(parsed["rows"]), 4)
        self.assertEqual(parsed["rows"][2]["out"]["busbw"], 0.02)
        self.assertEqual(parsed["rows"][2]["root"], -1)

    def test_weft_output_and_na(self):
        parsed = weft_plot.parse_file(sample("weft_all_reduce_t2.txt"))
        self.assertEqual(len(parsed["rows"]), 6)
        text = ("#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong \n"
                "        1024           256     float    none      -1    12.00    0.09    0.06    N/A    11.00    0.09    0.07    N/A\n"
                "warning from a launcher 1 2 3\n")
        rows = weft_plot.parse_text(text)["rows"]
        self.assertEqual(len(rows), 1)
        self.assertIsNone(rows[0]["out"]["wrong"])
        self.assertEqual(rows[0]["in"]["busbw"], 0.07)

    def test_table_and_svg(self):
        with tempfile.TemporaryDirectory() as tmp:
            chart = os.path.join(tmp, "busbw.svg")
            out = io.StringIO()
            with redirect_stdout(out):
                status = weft_plot.main([sample("nccl_tests_all_reduce.txt"), sample("weft_all_reduce_t2.txt"),
                                         "--svg", chart, "--labels", "nccl,weft"])
            self.assertEqual(status, 0)
            lines = out.getvalue().splitlines()
            self.assertIn("nccl", lines[0])
            self.assertTrue(any(l.split()[0] == "128M" and l.split()[1] == "389.45" for l in lines[1:]))
            with open(chart) as handle:
                svg = handle.read()
            self.assertTrue(svg.startswith("<svg"))
            self.assertEqual(svg.count("<polyline"), 2)

    def test_baseline_flags_slower_sizes_and_wrong_results(self):
        header = ("#       size         count      type   redop    root     time   algbw   busbw  #wrong"
                  "     time   algbw   busbw  #wrong \n")
        def run(rows):
            return header + "".join("%12d %13d     float     sum      -1 %8.2f    0.00    0.00 %6d %8.2f    0.00"
                                    "    0.00 %6d\n" % (size, size // 4, t, wrong, t, wrong)
                                    for size, t, wrong in rows)
        with tempfile.TemporaryDirectory() as tmp:
            base, same, slow = (os.path.join(tmp, n) for n in ("base.txt", "same.txt", "slow.txt"))
            with open(base, "w") as f:
                f.write(run([(1024, 10.0, 0), (1048576, 1000.0, 0)]))
            with open(same, "w") as f:
                f.write(run([(1024, 10.5, 0), (1048576, 950.0, 0)]))  # 5% slower, 5% faster: fine
            with open(slow, "w") as f:
                f.write(run([(1024, 10.0, 3), (1048576, 1250.0, 0)]))  # wrong results; 20% slower
            out = io.StringIO()
            with redirect_stdout(out):
                self.assertEqual(weft_plot.main(["--baseline", base, same]), 0)
            self.assertIn("# 0 regression(s)", out.getvalue())
            out = io.StringIO()
            with redirect_stdout(out):
                self.assertEqual(weft_plot.main(["--baseline", base, slow]), 3)
            text = out.getvalue()
            self.assertIn("WRONG 3", text)
            self.assertTrue(any(l.split()[0] == "1M" and l.endswith("SLOWER") for l in text.splitlines()), text)
            self.assertIn("# 2 regression(s)", text)
            out = io.StringIO()
            with redirect_stdout(out):
                self.assertEqual(weft_plot.main(["--baseline", base, slow, "--tolerance", "0.3"]), 3)  # still wrong
            self.assertIn("# 1 regression(s)", out.getvalue())

    def test_empty_input_fails(self):
        with tempfile.NamedTemporaryFile("w", suffix=".txt") as empty:
            empty.write("# nothing here\n")
            empty.flush()
            with redirect_stdout(io.StringIO()):
                self.assertEqual(weft_plot.main([empty.name]), 1)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]], verbosity=1)
