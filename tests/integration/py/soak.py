"""A bounded soak: the demo pair (models/demo) served split (drafter, target) behind the router on
127.0.0.1, driven by STREAMS concurrent clients for MINUTES. Every reply is compared with the same
request's solo run (token_sha256); the RSS, threads and open file descriptors of each process are
sampled every SAMPLE seconds. It passes with zero failed or unequal replies and no growth past the
bounds after the warm-up (the first fifth of the run, at least one minute):
    RSS: at most max(RSS_BOUND_MIB, 5 %) above the first sample after the warm-up;
    threads and file descriptors: at most 4 above it.
Prints a JSON report (also written to --report) and exits 1 when a goal is missed.

    /usr/bin/python3 tests/integration/py/soak.py --bins build --minutes 30 --streams 8

ctest runs a 3-minute version (soak_short_test); the 30-minute run is scripts/soak.sh.
"""
import argparse
import concurrent.futures
import json
import os
import random
import shutil
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import twinspan_procs  # noqa: E402

import grpc  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")

PROMPTS = [
    "def fibonacci(n):\n    \"\"\"Returns the n-th Fibonacci number.\"\"\"\n",
    "class Stack:\n    def __init__(self):\n        self.items = []\n\n    def push(self, item):\n",
    "import os\n\n\ndef list_python_files(folder):\n",
    "def merge_sorted(a, b):\n    result = []\n    i = j = 0\n",
    "    def __repr__(self):\n        return ",
    "# Parse a CSV line into fields, honouring quotes.\ndef parse_csv_line(line):\n",
    "def is_prime(n):\n    if n < 2:\n        return False\n",
    "async def fetch_all(urls):\n",
]
CHATS = [
    "Write a Python function `clamp(x, lo, hi)` that limits x to [lo, hi].",
    "Write a Python function `word_count(text)` returning a dict of word frequencies.",
    "Write a Python function `flatten(nested)` that flattens a list of lists.",
    "Write a Python function `chunks(seq, n)` yielding successive n-sized chunks.",
]


def make_requests(pb):
    """Greedy and sampled variants of every prompt and chat, with their own seeds and lengths."""
    out = []
    for i, text in enumerate(PROMPTS + CHATS):
        for temperature in (0.0, 0.8):
            r = pb.GenerateRequest()
            if i < len(PROMPTS):
                r.prompt = text
            else:
                r.chat.messages.add(role="user", content=text)
            r.sampling.max_tokens = 24 + 8 * (i % 4)
            r.sampling.temperature = temperature
            r.sampling.seed.value = 1000 + i
            r.sampling.ignore_eos = True
            out.append(r)
    return out


def generate(stub, request, timeout=600):
    final = None
    for response in stub.Generate(request, timeout=timeout):
        if response.HasField("final"):
            final = response.final
    if final is None:
        raise RuntimeError("stream ended without a final message")
    return final


def growth(samples, warmup_end, rss_bound_kib):
    """Per process: the first sample after the warm-up, the largest after it, and whether it
    stayed inside the bounds."""
    verdicts = {}
    for name in samples[0]["procs"]:
        after = [s["procs"][name] for s in samples if s["t"] >= warmup_end]
        if not after:
            verdicts[name] = {"ok": False, "why": "no sample after the warm-up"}
            continue
        base, peak = after[0], {k: max(a[k] for a in after) for k in after[0]}
        rss_allowed = max(rss_bound_kib, base["rss_kib"] * 0.05)
        ok = (peak["rss_kib"] - base["rss_kib"] <= rss_allowed and
              peak["threads"] - base["threads"] <= 4 and peak["fds"] - base["fds"] <= 4)
        verdicts[name] = {"ok": ok, "base": base, "peak": peak, "last": after[-1],
                          "rss_allowed_kib": int(rss_allowed)}
    return verdicts


def drafter_connected(stub, pb):
    """Whether the router's worker has its drafter; False until the router's first health check
    finds the worker (it answers UNAVAILABLE before that, which a loaded machine makes likely)."""
    try:
        return stub.ModelInfo(pb.ModelInfoRequest(), timeout=10).drafter_connected
    except grpc.RpcError as e:
        if e.code() != grpc.StatusCode.UNAVAILABLE:
            raise
        return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bins", default=os.path.join(ROOT, "build"))
    ap.add_argument("--models", default=os.path.join(ROOT, "models", "demo"))
    ap.add_argument("--proto", default=os.path.join(ROOT, "proto"))
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--streams", type=int, default=8)
    ap.add_argument("--sample", type=float, default=10, help="seconds between samples")
    ap.add_argument("--rss-bound-mib", type=float, default=32)
    ap.add_argument("--threads", type=int, default=2, help="CPU threads of each service")
    ap.add_argument("--report", default="")
    args = ap.parse_args()

    work = twinspan_procs.tempdir("twinspan-soak-")
    twinspan_procs.generate_stubs(args.proto, os.path.join(work))
    from twinspan.v1 import serving_pb2 as pb, serving_pb2_grpc as pb_grpc
    bins = {b: os.path.join(args.bins, "twinspan-" + b) for b in ("drafter", "target", "router")}
    cluster = twinspan_procs.Cluster(bins, work)
    t = str(args.threads)
    try:
        drafter = cluster.start("drafter", "drafter", [
            "--model", os.path.join(args.models, "drafter"), "--target-model",
            os.path.join(args.models, "target"), "--head-variant", "two-span",
            "--listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0", "--threads", t])
        target = cluster.start("target", "target", [
            "--model", os.path.join(args.models, "target"), "--drafter", drafter.address,
            "--listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0", "--threads", t,
            "--parallel", str(args.streams), "--context", "2048"])
        with open(os.path.join(work, "router.json"), "w") as f:
            json.dump({"pools": [{"variant": "two-span", "weight": 1,
                                  "workers": [target.address]}], "health_interval_ms": 200}, f)
        router = cluster.router("router", os.path.join(work, "router.json"))
        procs = {"router": router, "target": target, "drafter": drafter}
        stub = pb_grpc.ServingStub(grpc.insecure_channel(router.address))
        deadline = time.time() + 60
        while not drafter_connected(stub, pb):
            if time.time() > deadline:
                raise RuntimeError("the target never connected to its drafter")
            time.sleep(0.1)

        requests = make_requests(pb)
        solo = [generate(stub, r).token_sha256 for r in requests]  # one at a time
        start = time.time()
        end = start + args.minutes * 60
        warmup_end = start + max(60.0, args.minutes * 60 / 5)
        samples, counts, lock, stop = [], {"replies": 0, "failed": 0, "unequal": 0}, \
            threading.Lock(), threading.Event()
        errors = []

        def sampler():
            while not stop.is_set():
                samples.append({"t": time.time(), "procs": {n: twinspan_procs.proc_stats(p.proc.pid)
                                                             for n, p in procs.items()}})
                stop.wait(args.sample)

        def client(k):
            rng = random.Random(k)
            while time.time() < end:
                i = rng.randrange(len(requests))
                try:
                    sha = generate(stub, requests[i]).token_sha256
                    with lock:
                        counts["replies"] += 1
                        counts["unequal"] += sha != solo[i]
                except grpc.RpcError as e:
                    with lock:
                        counts["failed"] += 1
                        errors.append("%s: %s" % (e.code(), e.details()))

        sampling = threading.Thread(target=sampler)
        sampling.start()
        with concurrent.futures.ThreadPoolExecutor(args.streams) as pool:
            list(pool.map(client, range(args.streams)))
        stop.set()
        sampling.join()
        samples.append({"t": time.time(), "procs": {n: twinspan_procs.proc_stats(p.proc.pid)
                                                     for n, p in procs.items()}})
        verdicts = growth(samples, warmup_end, args.rss_bound_mib * 1024)
        report = {
            "minutes": args.minutes, "streams": args.streams, "requests": len(requests),
            "wall_seconds": round(time.time() - start, 1), "replies": counts["replies"],
            "failed": counts["failed"], "unequal": counts["unequal"], "errors": errors[:10],
            "warmup_seconds": round(warmup_end - start, 1), "samples": len(samples),
            "growth": verdicts,
            "series": [{"t": round(s["t"] - start, 1), **s["procs"]} for s in samples],
        }
        ok = (counts["failed"] == 0 and counts["unequal"] == 0 and counts["replies"] > 0 and
              all(v["ok"] for v in verdicts.values()))
        report["ok"] = ok
        text = json.dumps(report, indent=1)
        if args.report:
            with open(args.report, "w") as f:
                f.write(text)
        summary = dict(report)
        summary.pop("series")
        print(json.dumps(summary, indent=1))
        return 0 if ok else 1
    finally:
        cluster.stop_all()
        if os.environ.get("TWINSPAN_KEEP_LOGS") is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
