"""Sends one chat request to a Twinspan router and prints the reply with its tokens per round.

Usage: demo_client.py ROUTER_ADDRESS PROTO_DIR "message" [MAX_TOKENS]
Uses Debian's python3-grpcio; the twinspan.v1 stubs are generated into a temporary folder.
"""
import sys
import tempfile

import grpc
import grpc_tools.protoc


def main():
    address, proto_dir, message = sys.argv[1], sys.argv[2], sys.argv[3]
    max_tokens = int(sys.argv[4]) if len(sys.argv) > 4 else 48
    out = tempfile.mkdtemp(prefix="twinspan-demo-stubs-")
    protos = [proto_dir + "/twinspan/v1/serving.proto"]
    if grpc_tools.protoc.main(["protoc", "-I" + proto_dir, "-I/usr/include",
                               "--python_out=" + out, "--grpc_python_out=" + out] + protos) != 0:
        sys.exit("demo: cannot generate the Python stubs from " + proto_dir)
    sys.path.insert(0, out)
    from twinspan.v1 import serving_pb2 as pb, serving_pb2_grpc as pb_grpc

    stub = pb_grpc.ServingStub(grpc.insecure_channel(address))
    request = pb.GenerateRequest()
    request.chat.messages.add(role="user", content=message)
    request.sampling.max_tokens = max_tokens
    request.sampling.temperature = 0.0
    request.session_key = "demo"
    print("demo: user: %s" % message)
    rounds = []
    final = None
    sys.stdout.write("demo: reply: ")
    for response in stub.Generate(request, timeout=120):
        if response.HasField("chunk"):
            sys.stdout.write(response.chunk.text)
            sys.stdout.flush()
            if response.chunk.ids:
                rounds.append(len(response.chunk.ids))
        else:
            final = response.final
    print()
    f = final
    print("demo: request %s served by %s, head variant %s" % (response.request_id, f.served_by,
                                                              f.head_variant))
    print("demo: %d prompt tokens, %d completion tokens, finish %s" % (
        f.prompt_tokens, f.completion_tokens, pb.FinishReason.Name(f.finish_reason)))
    print("demo: tokens per round: %s" % list(f.tokens_per_round))
    mean = sum(f.tokens_per_round) / max(1, len(f.tokens_per_round))
    print("demo: %d rounds, %d drafted, %d accepted, %.2f tokens per round" % (
        f.rounds, f.drafted, f.accepted, mean))
    print("demo: token_sha256 %s (seed %d)" % (f.token_sha256, f.seed))


if __name__ == "__main__":
    main()
