"""Command line of twinspan-bench."""

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time

from . import compare, exactness, prefix_ttft, prompts, report
from .model import GREEDY, Prompt, sampled
from .runner import RunOptions, Runner

EXIT_OK, EXIT_INEXACT, EXIT_USAGE = 0, 1, 2


def comma_list(text: str) -> list:
    return [item.strip() for item in text.split(",") if item.strip()]


def positive_levels(text: str) -> list:
    try:
        levels = [int(x) for x in comma_list(text)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--levels wants positive integers like 1,2,4,8, got '{text}'")
    if not levels or any(n < 1 for n in levels):
        raise argparse.ArgumentTypeError(f"--levels wants positive integers like 1,2,4,8, got '{text}'")
    return sorted(set(levels))


def at_least(minimum: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got '{text}'")
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value
    return parse


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="twinspan-bench",
        description="Benchmark a Twinspan target or router through its public gRPC API: per-stream "
        "speed, tokens per round and proof that drafting changed no token.",
        epilog="Exit codes: 0 done; 1 with --strict when a comparison was unequal or failed, or a "
        "request failed; 2 bad arguments, unreadable files or no server.")
    p.add_argument("--target", default=os.environ.get("TWINSPAN_TARGET", "127.0.0.1:50051"),
                   help="host:port of twinspan-target or twinspan-router (default %(default)s)")
    p.add_argument("--cells", type=comma_list, default=None,
                   help="built-in prompts: code, chat, long, edit (default code,chat; none with "
                   "--prompts); 'prefix' adds the prefix-reuse cell (TTFT fresh against resumed)")
    p.add_argument("--context-copy", choices=("default", "on", "off", "both"), default="default",
                   help="context-copy drafts in the cells: the server's default, on, off, or both "
                   "(each cell twice, the second labelled /nocopy)")
    p.add_argument("--prefix-tokens", type=at_least(1), default=4096,
                   help="prefix cell: tokens of the shared prompt prefix (default %(default)s)")
    p.add_argument("--prefix-suffix", type=at_least(1), default=64,
                   help="prefix cell: tokens of each new suffix (default %(default)s)")
    p.add_argument("--long-functions", type=at_least(1), default=80,
                   help="size of the 'long' prompt in synthetic functions of ~200 characters "
                   "(default %(default)s: about 16,000 characters)")
    p.add_argument("--prompts", metavar="FILE",
                   help="JSON lines: name, kind and either prompt (raw text) or messages (chat)")
    p.add_argument("--modes", type=comma_list, default=["greedy", "sampled"],
                   help="greedy and/or sampled (top-k 20, top-p 0.95, a seed per stream)")
    p.add_argument("--temperature", type=float, default=0.6, help="for sampled cells (%(default)s)")
    p.add_argument("--levels", type=positive_levels, default=[1, 2, 4, 8],
                   help="concurrent streams started together (default 1,2,4,8)")
    p.add_argument("--tokens", type=at_least(1), default=128, help="tokens per reply, ignore_eos")
    p.add_argument("--reps", type=at_least(1), default=3, help="repetitions per cell (median)")
    p.add_argument("--warmup", type=at_least(0), default=1, help="warm-up rounds per cell")
    p.add_argument("--warmup-tokens", type=at_least(1), default=8, help="tokens per warm-up reply")
    p.add_argument("--variant", action="append", default=None, metavar="NAME",
                   help="pin a head variant (repeat or comma-separate for several)")
    p.add_argument("--no-draft", action="store_true",
                   help="run the cells with draft: false, the plain baseline to --compare against")
    p.add_argument("--seed", type=int, default=1234, help="stream i samples with seed SEED+i")
    p.add_argument("--alone", action="store_true",
                   help="check every concurrent reply against its solo run")
    p.add_argument("--serial", action="store_true",
                   help="check every solo run against draft: false")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 on any unequal or failed comparison or failed request")
    p.add_argument("--timeout", type=float, default=600.0, help="deadline per request, seconds")
    p.add_argument("--connect-timeout", type=float, default=30.0,
                   help="seconds to wait for the server to answer ModelInfo")
    p.add_argument("--require-drafter", action="store_true",
                   help="wait (up to --connect-timeout) until ModelInfo says a drafter is connected")
    p.add_argument("--jsonl", metavar="FILE", help="one JSON line per cell ('-' for stdout)")
    p.add_argument("--report", metavar="FILE", help="full report with per-request evidence (JSON)")
    p.add_argument("--plot", metavar="PNG", help="tokens per round and tok/s per cell and variant")
    p.add_argument("--quiet", action="store_true", help="no table and no progress")
    p.add_argument("--stubs-dir", default=os.environ.get("TWINSPAN_BENCH_STUBS"),
                   help="where to generate the Python gRPC stubs (default tools/bench/_stubs)")
    p.add_argument("--compare", nargs=2, metavar=("A", "B"),
                   help="print two runs (reports or JSON lines) side by side and exit")
    return p


def select_prompts(args) -> list:
    """The prompts to run, built-in and from --prompts; raises ValueError on unknown names."""
    builtin = prompts.builtin_prompts(args.long_functions)
    names = args.cells if args.cells is not None else ([] if args.prompts else ["code", "chat"])
    names = [n for n in names if n != "prefix"]  # not a prompt: its own cell
    unknown = [n for n in names if n not in builtin]
    if unknown:
        raise ValueError(f"--cells: unknown built-in prompt(s) {unknown}; have {sorted(builtin)}")
    chosen = [builtin[n] for n in names]
    if args.prompts:
        chosen += prompts.load_prompt_file(args.prompts)
    taken = set()
    for prompt in chosen:
        if prompt.name in taken:
            raise ValueError(f"prompt name '{prompt.name}' is used twice (built-in and --prompts?)")
        taken.add(prompt.name)
    if not chosen and "prefix" not in (args.cells or []):
        raise ValueError("no prompts selected (--cells is empty and no --prompts)")
    return chosen


COPY_MODES = {"default": (None,), "on": (True,), "off": (False,), "both": (True, False)}


def prefix_source_ids(backend, args) -> list:
    """Token ids of a synthetic module long enough for the prefix cell."""
    need = args.prefix_tokens + args.prefix_suffix * (args.reps + 2) + args.reps + 1
    functions = 80
    while True:
        ids = backend.tokenize(Prompt("prefix", "code", text=prompts.long_code_prompt(functions)))
        if ids is None:
            raise ValueError("prefix cell: the server has no Tokenize")
        if len(ids) >= need or functions > 100000:
            return ids
        functions *= 2


def select_modes(args) -> list:
    known = {"greedy": GREEDY, "sampled": sampled(args.temperature)}
    unknown = [m for m in args.modes if m not in known]
    if unknown or not args.modes:
        raise ValueError(f"--modes: want greedy and/or sampled, got {args.modes}")
    if args.temperature <= 0 and "sampled" in args.modes:
        raise ValueError(f"--temperature must be above 0 for sampled cells, got {args.temperature}")
    return [known[m] for m in args.modes]


def source_commit() -> str:
    """The bench's own checkout commit, or '' outside a git checkout."""
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        out = subprocess.run(["git", "-C", here, "rev-parse", "--short=12", "HEAD"],
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip() if out.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError):
        return ""


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def make_backend(args):
    """The gRPC backend; imported late so --compare and the tests need no stubs."""
    from . import client
    return client.GrpcBackend(args.target, timeout_s=args.timeout, stubs_dir=args.stubs_dir)


def wait_for_drafter(backend, model_info: dict, timeout_s: float, poll_s: float = 0.2) -> dict:
    """ModelInfo once it says drafter_connected; raises ConnectionError after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not model_info.get("drafter_connected", False):
        if time.monotonic() > deadline:
            raise ConnectionError(f"--require-drafter: no drafter connected after {timeout_s:g} s "
                                  f"(ModelInfo head_variant '{model_info.get('head_variant', '')}')")
        time.sleep(poll_s)
        model_info = backend.model_info(timeout_s)
    return model_info


def check_prompt_lengths(backend, chosen, tokens: int, model_info: dict) -> dict:
    """Each prompt's token count (Tokenize); raises ValueError when a prompt and its reply would not
    fit the model's context, so a cell never fails half-way for a reason known in advance."""
    max_context = int(model_info.get("max_context", 0))
    max_prompt = int(model_info.get("max_prompt_tokens", 0))
    counts = {}
    for prompt in chosen:
        n = backend.prompt_tokens(prompt)
        counts[prompt.name] = n
        if n is None:
            continue
        if max_prompt and n > max_prompt:
            raise ValueError(f"prompt '{prompt.name}' has {n} tokens, above the server's "
                             f"max_prompt_tokens {max_prompt}")
        if max_context and n + tokens > max_context:
            raise ValueError(f"prompt '{prompt.name}' has {n} tokens; with --tokens {tokens} that "
                             f"exceeds the model's max_context {max_context}")
    return counts


def run_bench(args, backend, chosen, modes, out=sys.stdout, err=sys.stderr) -> int:
    """Runs every cell of `chosen` prompts x `modes` on `backend`, writes the outputs; returns the
    exit code."""
    log = (lambda s: None) if args.quiet else (lambda s: print(f"twinspan-bench: {s}", file=err,
                                                                 flush=True))
    variants = [v for arg in (args.variant or []) for v in comma_list(arg)] or [""]
    options = RunOptions(tokens=args.tokens, reps=args.reps, warmup=args.warmup,
                         warmup_tokens=args.warmup_tokens, alone=args.alone, serial=args.serial,
                         base_seed=args.seed, draft=not args.no_draft,
                         context_copy=COPY_MODES[args.context_copy])
    model_info = backend.model_info(args.connect_timeout)
    if args.require_drafter:
        model_info = wait_for_drafter(backend, model_info, args.connect_timeout)
    prompt_tokens = check_prompt_lengths(backend, chosen, args.tokens, model_info)
    with_prefix = "prefix" in (args.cells or [])
    max_context = int(model_info.get("max_context", 0))
    if with_prefix and max_context and (args.prefix_tokens + args.prefix_suffix + args.tokens
                                        > max_context):
        raise ValueError(f"prefix cell: {args.prefix_tokens} + {args.prefix_suffix} prompt tokens "
                         f"and --tokens {args.tokens} exceed the model's max_context {max_context}")
    meta = {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S"),
        "argv": sys.argv[1:], "target": args.target, "model": model_info,
        "bench_commit": source_commit(), "cpu": cpu_model(), "cpus": os.cpu_count(),
        "load_average_at_start": list(os.getloadavg()),
        "options": {"tokens": args.tokens, "reps": args.reps, "warmup": args.warmup,
                    "levels": args.levels, "modes": args.modes, "temperature": args.temperature,
                    "top_k": 20, "top_p": 0.95, "seed": args.seed, "variants": variants,
                    "alone": args.alone, "serial": args.serial, "draft": not args.no_draft,
                    "long_functions": args.long_functions, "context_copy": args.context_copy,
                    "prefix_tokens": args.prefix_tokens, "prefix_suffix": args.prefix_suffix},
        "prompt_tokens": prompt_tokens,
    }
    jsonl = None
    if args.jsonl == "-":
        jsonl = out
    elif args.jsonl:
        jsonl = open(args.jsonl, "w", encoding="utf-8")
    cells = []
    runner = Runner(backend, options, log)

    def on_cell(cell):
        cells.append(cell)
        if jsonl is not None:
            jsonl.write(report.json_line(cell["record"]) + "\n")
            jsonl.flush()

    try:
        for prompt in chosen:
            for sampling in modes:
                runner.run(prompt, sampling, args.levels, variants, on_cell)
        if with_prefix:
            log("cell prefix/greedy/c1")
            on_cell(prefix_ttft.run_prefix_cell(backend, prefix_source_ids(backend, args),
                                                args.prefix_tokens, args.prefix_suffix, args.reps,
                                                args.tokens, log))
    finally:
        if jsonl is not None and jsonl is not out:
            jsonl.close()
    records = [c["record"] for c in cells]
    meta["load_average_at_end"] = list(os.getloadavg())
    if args.report:
        report.write_report(args.report, meta, cells, runner.references)
    if args.plot:
        from . import plot
        plot.plot_cells(records, args.plot, title=f"twinspan-bench {model_info.get('name', '')}")
    tot = report.totals(records)
    if not args.quiet:
        if args.jsonl != "-":
            plain_cells = [r for r in records if r.get("kind") != "prefix"]
            prefix_cells = [r for r in records if r.get("kind") == "prefix"]
            if plain_cells:
                print(report.cells_table(plain_cells), file=out)
            if prefix_cells:
                print(report.markdown_table(prefix_ttft.PREFIX_HEADER, [
                    prefix_ttft.prefix_row(r, report.fmt, report.fmt_tally)
                    for r in prefix_cells]), file=out)
        print("exactness (equal/unequal/failed): " + ", ".join(
            f"{c} {report.fmt_tally(tot[c])}" for c in exactness.CHECKS)
            + f"; failed requests {tot['failed_requests']}", file=err)
    bad = tot["failed_requests"] > 0 or any(
        tot[c]["unequal"] or tot[c]["failed"] for c in exactness.CHECKS)
    return EXIT_INEXACT if (args.strict and bad) else EXIT_OK


def main(argv=None, backend_factory=make_backend, out=None, err=None) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    args = build_parser().parse_args(argv)
    try:
        if args.compare:
            a, b = (report.load_cells(path) for path in args.compare)
            print(f"A: {args.compare[0]}\nB: {args.compare[1]}\n", file=out)
            print(compare.compare_table(a, b), file=out)
            return EXIT_OK
        chosen, modes = select_prompts(args), select_modes(args)
        return run_bench(args, backend_factory(args), chosen, modes, out=out, err=err)
    except (ValueError, OSError, ConnectionError) as e:
        print(f"twinspan-bench: {e}", file=err)
        return EXIT_USAGE
