#!/usr/bin/env python3
"""Runs one command for ctest: `{golden}` in its arguments becomes $TWINSPAN_GOLDEN (else
--golden-default), and with --exit / --match its exit code and output are checked (ctest's
PASS_REGULAR_EXPRESSION alone ignores the exit code). Without --exit it exits as the command did.

usage: run_check.py [--golden-default DIR] [--exit N] [--match REGEX]... -- COMMAND [ARG...]
"""
import argparse
import os
import re
import subprocess
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--golden-default", default="")
    parser.add_argument("--exit", type=int, dest="want_exit")
    parser.add_argument("--match", action="append", default=[])
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given")
    golden = os.environ.get("TWINSPAN_GOLDEN") or args.golden_default
    command = [a.replace("{golden}", golden) for a in command]
    run = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    sys.stdout.write(run.stdout)
    if args.want_exit is None:
        return run.returncode
    failures = []
    if run.returncode != args.want_exit:
        failures.append("exit code %d, expected %d" % (run.returncode, args.want_exit))
    failures += ["no line matches %r" % m for m in args.match
                 if not re.search(m, run.stdout, re.MULTILINE)]
    for f in failures:
        print("run_check: %s: %s" % (" ".join(command), f))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
