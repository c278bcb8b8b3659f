#!/usr/bin/python3
"""Integration check: starts real Twinspan services on loopback, runs twinspan-bench on one small cell
with every exactness check, verifies the counts, and stops the services.

Steps run in the order given: --run COMMAND runs to completion (e.g. writing the demo model),
--write PATH=TEXT writes a file under the work folder (e.g. a router config), and --service
NAME=COMMAND starts a server that must print "... listening grpc=<port> ..." on stdout (as every
Twinspan server does). In any step "{work}" becomes the work folder and "{NAME}" 127.0.0.1:<port> of
an earlier service. The bench runs against the last service.
"""

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

LISTENING = re.compile(r"listening grpc=(\d+)")


class Service:
    """One server process; its stdout and stderr go to a log file, its gRPC port comes from stdout."""

    def __init__(self, name: str, argv: list, log_dir: str):
        self.name = name
        self.log_path = os.path.join(log_dir, f"{name}.log")
        self.log = open(self.log_path, "w", encoding="utf-8")
        self.port = None
        self.ready = threading.Event()
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, start_new_session=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.log.write(line)
            self.log.flush()
            match = LISTENING.search(line)
            if match and self.port is None:
                self.port = int(match.group(1))
                self.ready.set()
        self.ready.set()  # exited: stop waiting

    def wait_ready(self, timeout_s: float) -> None:
        if not self.ready.wait(timeout_s) or self.port is None:
            raise RuntimeError(f"{self.name} did not announce 'listening grpc=<port>' within "
                               f"{timeout_s:g} s (exit code {self.proc.poll()}); log:\n{self.tail()}")

    def tail(self, lines: int = 40) -> str:
        if not self.log.closed:
            self.log.flush()
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            return "".join(f.readlines()[-lines:])

    def stop(self, grace_s: float = 15.0) -> None:
        """SIGTERM (the servers drain), then SIGKILL after `grace_s`."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(grace_s)
            except subprocess.TimeoutExpired:
                print(f"services_check: {self.name} ignored SIGTERM for {grace_s:g} s; killing it",
                      file=sys.stderr)
                self.proc.kill()
                self.proc.wait()
        self.reader.join(5)
        self.log.close()


def check_totals(report: dict, checks: list, floors: dict = None) -> list:
    """Problems with the report's exactness totals: every check ran, all equal, nothing failed;
    and every cell of a mode in `floors` drafted at least that many tokens per round."""
    problems = []
    totals = report["totals"]
    for check in checks:
        t = totals[check]
        if t["equal"] == 0:
            problems.append(f"{check}: no comparison ran")
        if t["unequal"] or t["failed"]:
            problems.append(f"{check}: {t['unequal']} unequal, {t['failed']} failed")
    if totals["failed_requests"]:
        problems.append(f"{totals['failed_requests']} requests failed")
    for cell in report["cells"]:
        tpr = cell["tokens_per_round"]
        floor = max(1.0, (floors or {}).get(cell["mode"], 1.0))
        if tpr is None or tpr < floor:
            problems.append(f"{cell['cell']}: tokens per round {tpr} (floor {floor:g})")
    return problems


def parse_floors(specs: list) -> dict:
    """["greedy=3.2", "sampled=1.5"] -> {"greedy": 3.2, "sampled": 1.5}."""
    floors = {}
    for spec in specs or []:
        mode, _, value = spec.partition("=")
        try:
            floors[mode] = float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"--min-tokens-per-round wants MODE=NUMBER, got '{spec}'")
    return floors


class Step(argparse.Action):
    """Keeps --run, --write and --service in one list, in command-line order."""

    def __call__(self, parser, namespace, value, option_string=None):
        steps = getattr(namespace, "steps", None) or []
        steps.append((option_string.lstrip("-"), value))
        namespace.steps = steps


def substitute(text: str, work: str, addresses: dict) -> str:
    text = text.replace("{work}", work)
    for name, address in addresses.items():
        text = text.replace("{" + name + "}", address)
    return text


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--run", action=Step, metavar="COMMAND", dest="steps")
    p.add_argument("--write", action=Step, metavar="PATH=TEXT", dest="steps")
    p.add_argument("--service", action=Step, metavar="NAME=COMMAND", dest="steps")
    p.add_argument("--bench", required=True, help="the twinspan-bench executable")
    p.add_argument("--startup-timeout", type=float, default=120.0)
    p.add_argument("--bench-args", default="--cells code --modes greedy,sampled --levels 1,2 "
                   "--tokens 16 --reps 2 --warmup 1 --alone --serial",
                   help="the cell to run (default: %(default)s)")
    p.add_argument("--min-tokens-per-round", action="append", metavar="MODE=FLOOR",
                   help="fail a cell of MODE (greedy, sampled) below FLOOR tokens per round")
    p.add_argument("--keep-logs", action="store_true")
    args = p.parse_args(argv)
    try:
        floors = parse_floors(args.min_tokens_per_round)
    except argparse.ArgumentTypeError as e:
        p.error(str(e))
    if not args.steps or not any(kind == "service" for kind, _ in args.steps):
        p.error("give at least one --service NAME=COMMAND")

    work = tempfile.mkdtemp(prefix="twinspan-bench-it-")
    services, addresses = [], {}
    code = 1
    try:
        for kind, spec in args.steps:
            if kind == "run":
                command = shlex.split(substitute(spec, work, addresses))
                print(f"services_check: running {' '.join(command)}", flush=True)
                done = subprocess.run(command, capture_output=True, text=True, timeout=600)
                if done.returncode != 0:
                    raise RuntimeError(f"'{spec}' exited {done.returncode}:\n{done.stdout}{done.stderr}")
                continue
            name, _, value = spec.partition("=")
            if not name or not value:
                raise RuntimeError(f"--{kind} wants NAME=VALUE, got '{spec}'")
            if kind == "write":
                with open(os.path.join(work, name), "w", encoding="utf-8") as f:
                    f.write(substitute(value, work, addresses))
                continue
            service = Service(name, shlex.split(substitute(value, work, addresses)), work)
            services.append(service)
            service.wait_ready(args.startup_timeout)
            addresses[name] = f"127.0.0.1:{service.port}"
            print(f"services_check: {name} on {addresses[name]}", flush=True)
        report_path = os.path.join(work, "report.json")
        bench = [args.bench, "--target", addresses[services[-1].name], "--strict",
                 "--report", report_path, *shlex.split(args.bench_args)]
        print("services_check: " + " ".join(shlex.quote(a) for a in bench), flush=True)
        run = subprocess.run(bench, timeout=1800)
        if not os.path.exists(report_path):
            raise RuntimeError(f"twinspan-bench exited {run.returncode} without a report")
        with open(report_path, encoding="utf-8") as f:
            report = json.load(f)
        checks = [c for c in ("alone", "serial", "repeat") if f"--{c}" in args.bench_args
                  or c == "repeat"]
        problems = check_totals(report, checks, floors)
        if run.returncode != 0:
            problems.append(f"twinspan-bench --strict exited {run.returncode}")
        for problem in problems:
            print(f"services_check: FAIL {problem}", file=sys.stderr)
        totals = report["totals"]
        print("services_check: tokens per round " + ", ".join(
            f"{c['cell']} {c['tokens_per_round']}" for c in report["cells"]))
        print("services_check: exactness " + ", ".join(
            f"{c} {totals[c]['equal']}/{totals[c]['unequal']}/{totals[c]['failed']}" for c in checks))
        code = 1 if problems else 0
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
        print(f"services_check: FAIL {e}", file=sys.stderr)
    finally:
        for service in reversed(services):
            service.stop()
        if code != 0:
            for service in services:
                print(f"--- {service.name} log (last lines) ---\n{service.tail()}", file=sys.stderr)
        if args.keep_logs or code:
            print(f"services_check: logs in {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
