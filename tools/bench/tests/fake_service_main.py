"""A process wrapping FakeServingForBenchTests that behaves like a Twinspan server towards
services_check.py: announces 'listening grpc=<port>' on stdout and stops on SIGTERM."""

import os
import re
import signal
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests.fake_serving import FakeServingForBenchTests  # noqa: E402


def main():
    if "--peer-file" in sys.argv:  # a file an earlier step wrote, holding an address
        with open(sys.argv[sys.argv.index("--peer-file") + 1], encoding="utf-8") as f:
            peer = f.read()
        if not re.fullmatch(r"127\.0\.0\.1:\d+", peer):
            sys.exit(f"fake: --peer-file holds '{peer}', not 127.0.0.1:<port>")
    if "--need" in sys.argv and not os.path.exists(sys.argv[sys.argv.index("--need") + 1]):
        sys.exit("fake: the file --need names is missing")
    server = FakeServingForBenchTests(os.environ.get("TWINSPAN_BENCH_STUBS"))
    server.lie_about_hash = "--lie-about-hash" in sys.argv
    if "--peer" in sys.argv:  # stands for a target pointed at its drafter
        peer = sys.argv[sys.argv.index("--peer") + 1]
        if not re.fullmatch(r"127\.0\.0\.1:\d+", peer):
            sys.exit(f"fake: --peer wants 127.0.0.1:<port>, got '{peer}'")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print(f"fake listening grpc={server.port} metrics=0", flush=True)
    stop.wait()
    server.stop()


if __name__ == "__main__":
    main()
