"""Per-round time of the demo pair served several ways: no drafter, drafter in the target process,
drafter over gRPC on loopback with raw or fused tap rows (the target applying the drafter's fc +
hidden_norm, twinspan-target --fuse-taps) as f32 or bf16 (--bf16-taps). Prints the median ms per
verify round over repeated requests, all variants in one run.

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
        fuse = ("--fuse-taps", os.path.join(models, "drafter"))
        targets = {
            "none": c.target("plain", models, parallel=1),
            "in-process": c.target("inproc", models, in_process_drafter=True, parallel=1),
            "grpc raw f32": c.target("split", models, drafter=d.address, parallel=1),
            "grpc fused f32": c.target("fused", models, drafter=d.address, parallel=1,
                                       extra=fuse),
            "grpc raw bf16": c.target("bf16", models, drafter=d.address, parallel=1,
                                      extra=("--bf16-taps",)),
            "grpc fused bf16": c.target("fused-bf16", models, drafter=d.address, parallel=1,
                                        extra=fuse + ("--bf16-taps",)),
        }
        stubs = {name: pb_grpc.ServingStub(grpc.insecure_channel(t.address))
                 for name, t in targets.items()}
        deadline = time.time() + 60
        for name, stub in stubs.items():  # every drafted variant has its drafter before timing
            while name != "none" and not stub.ModelInfo(pb.ModelInfoRequest(),
                                                        timeout=10).drafter_connected:
                if time.time() > deadline:
                    raise RuntimeError(name + " never connected to its drafter")
                time.sleep(0.1)
        per_round = {name: [] for name in targets}
        finals = {}
        # Interleaved: each repeat runs every variant once, so load drift hits them alike.
        for i in range(a.repeats + 1):
            for name, stub in stubs.items():
                r = pb.GenerateRequest(prompt="the quick brown fox jumps over the lazy dog")
                r.sampling.max_tokens = a.max_tokens
                r.sampling.ignore_eos = True
                start = time.perf_counter()
                for m in stub.Generate(r, timeout=300):
                    if m.HasField("final"):
                        finals[name] = m.final
                final = finals[name]
                elapsed = time.perf_counter() - start - final.timings.prefill_seconds
                if i > 0:  # the first request warms up
                    per_round[name].append(1000 * elapsed / final.rounds)
        print("| drafter | ms per round (median of %d) | rounds | drafted per round | token_sha256 |"
              % a.repeats)
        print("| --- | --- | --- | --- | --- |")
        for name in targets:
            final = finals[name]
            print("| %s | %.3f | %d | %.1f | %s |" % (
                name, statistics.median(per_round[name]), final.rounds,
                final.drafted / max(1, final.rounds), final.token_sha256[:12]))
    finally:
        c.stop_all()


if __name__ == "__main__":
    main()
