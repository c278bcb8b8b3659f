"""Per-round time of the demo pair served three ways: no drafter, drafter in the target process,
drafter over gRPC on loopback. Prints the median ms per verify round over repeated requests.

Usage (from the build folder): python3 ../tests/bench/services_split_demo.py [--repeats N]
"""
import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration", "py"))
import twinspan_procs  # noqa: E402
import grpc  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=".")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--max-tokens", type=int, default=128)
    a = ap.parse_args()
    b = os.path.abspath(a.build)
    bins = {"target": b + "/twinspan-target", "drafter": b + "/twinspan-drafter",
            "router": b + "/twinspan-router"}
    work = twinspan_procs.tempdir("twinspan-bench-")
    twinspan_procs.generate_stubs(os.path.join(HERE, "..", "..", "proto"), work)
    from twinspan.v1 import serving_pb2 as pb, serving_pb2_grpc as pb_grpc
    models = twinspan_procs.make_demo(b + "/make-demo", os.path.join(work, "models"))
    c = twinspan_procs.Cluster(bins, work)
    try:
        d = c.drafter("drafter", models)
        targets = {
            "none": c.target("plain", models, parallel=1),
            "in-process": c.target("inproc", models, in_process_drafter=True, parallel=1),
            "grpc": c.target("split", models, drafter=d.address, parallel=1),
        }
        time.sleep(1.0)
        print("| drafter | ms per round (median of %d) | rounds | drafted per round |" % a.repeats)
        print("| --- | --- | --- | --- |")
        for name, t in targets.items():
            stub = pb_grpc.ServingStub(grpc.insecure_channel(t.address))
            per_round, final = [], None
            for i in range(a.repeats + 1):
                r = pb.GenerateRequest(prompt="the quick brown fox jumps over the lazy dog")
                r.sampling.max_tokens = a.max_tokens
                r.sampling.ignore_eos = True
                start = time.perf_counter()
                for m in stub.Generate(r, timeout=300):
                    if m.HasField("final"):
                        final = m.final
                elapsed = time.perf_counter() - start - final.timings.prefill_seconds
                if i > 0:  # the first request warms up
                    per_round.append(1000 * elapsed / final.rounds)
            print("| %s | %.3f | %d | %.1f |" % (name, statistics.median(per_round), final.rounds,
                                                final.drafted / max(1, final.rounds)))
    finally:
        c.stop_all()


if __name__ == "__main__":
    main()
