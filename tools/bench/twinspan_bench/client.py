"""The bench's backend over the public gRPC API (twinspan.v1.Serving on a target or a router)."""

import hashlib
import json
import struct
import time

import grpc
from google.protobuf import json_format

from . import stubs
from .model import GenRequest, GenResult

MAX_MESSAGE_BYTES = 64 << 20


def ids_sha256(ids) -> str:
    """SHA-256 hex of the ids as little-endian uint32: how the server defines token_sha256."""
    return hashlib.sha256(struct.pack(f"<{len(ids)}I", *ids)).hexdigest()


def build_request(pb2, req: GenRequest):
    """The GenerateRequest for one bench request."""
    sampling = pb2.SamplingParams(max_tokens=req.max_tokens, temperature=req.sampling.temperature,
                                  top_k=req.sampling.top_k, top_p=req.sampling.top_p,
                                  ignore_eos=req.ignore_eos)
    sampling.seed.value = req.seed
    sampling.draft.value = req.draft
    if req.context_copy is not None:
        sampling.context_copy.value = req.context_copy
    message = pb2.GenerateRequest(sampling=sampling, head_variant=req.variant or "")
    if req.prompt.json_schema is not None:
        message.structured_output.json_schema = req.prompt.json_schema
    if req.prompt.text is not None:
        message.prompt = req.prompt.text
    elif req.prompt.ids is not None:
        message.prompt_ids.ids.extend(req.prompt.ids)
    else:
        message.chat.messages.extend(pb2.ChatMessage(role=r, content=c)
                                     for r, c in req.prompt.messages)
    return message


def read_stream(pb2, responses, req: GenRequest, result: GenResult) -> GenResult:
    """Fills `result` from a Generate response stream; checks the Final against the streamed ids."""
    ids, final, text = [], None, []
    for response in responses:
        kind = response.WhichOneof("kind")
        if kind == "chunk":
            text.append(response.chunk.text)
            if response.chunk.ids:
                result.chunks.append((time.perf_counter(), len(response.chunk.ids)))
                ids.extend(response.chunk.ids)
        elif kind == "final":
            final = response.final
    result.t_end = time.perf_counter()
    if final is None:
        result.ok, result.error = False, "stream ended without a Final message"
        return result
    result.token_sha256 = final.token_sha256
    result.prompt_tokens = final.prompt_tokens
    result.completion_tokens = final.completion_tokens
    result.drafted, result.accepted, result.rounds = final.drafted, final.accepted, final.rounds
    result.seed, result.variant = final.seed, final.head_variant
    result.finish_reason = pb2.FinishReason.Name(final.finish_reason)
    result.round_tokens = list(final.tokens_per_round)
    result.draft_degraded = final.draft_degraded
    result.cached_prompt_tokens = final.cached_prompt_tokens
    result.copy_drafted = final.context_copy_drafted
    result.copy_accepted = final.context_copy_accepted
    result.server = {"timings": json_format.MessageToDict(final.timings,
                                                          preserving_proto_field_name=True),
                     "served_by": final.served_by}
    # The reply must prove itself: hash, count and length agree with what was streamed.
    problems = []
    if req.ignore_eos and final.finish_reason != pb2.FINISH_REASON_LENGTH:
        problems.append(f"finished by {result.finish_reason} after {final.completion_tokens} "
                        f"tokens (want {req.max_tokens} with ignore_eos)")
    if req.prompt.json_schema is not None:
        problems += structured_problems(pb2, final, "".join(text))
    if final.completion_tokens != len(ids):
        problems.append(f"completion_tokens {final.completion_tokens} but {len(ids)} ids streamed")
    if final.token_sha256 != ids_sha256(ids):
        problems.append("token_sha256 does not match the streamed ids")
    if problems:
        result.ok, result.error = False, "; ".join(problems)
    return result


def structured_problems(pb2, final, text: str) -> list:
    """Structured output must end at EOS (the grammar completed) with text that parses as JSON."""
    if final.finish_reason != pb2.FINISH_REASON_EOS:
        return [f"structured output finished by {pb2.FinishReason.Name(final.finish_reason)} "
                f"after {final.completion_tokens} tokens, not by EOS (raise --tokens)"]
    try:
        json.loads(text)
    except ValueError as e:
        return [f"structured output does not parse as JSON ({e})"]
    return []


class GrpcBackend:
    """Calls twinspan.v1.Serving on one address; safe to use from several threads."""

    def __init__(self, target: str, timeout_s: float = 600.0, stubs_dir: str = None):
        self.pb2, pb2_grpc = stubs.load(stubs_dir)
        self.target = target
        self.timeout_s = timeout_s
        self.channel = grpc.insecure_channel(target, options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES)])
        self.stub = pb2_grpc.ServingStub(self.channel)

    def model_info(self, connect_timeout_s: float) -> dict:
        """ModelInfo as a dict; raises ConnectionError when the server does not answer in time."""
        try:
            reply = self.stub.ModelInfo(self.pb2.ModelInfoRequest(), timeout=connect_timeout_s,
                                        wait_for_ready=True)
        except grpc.RpcError as e:
            if e.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                raise ConnectionError(f"no answer from {self.target} within {connect_timeout_s:g} s "
                                      "(is twinspan-target or twinspan-router running there?)") from None
            raise ConnectionError(f"ModelInfo on {self.target} failed: {e.code().name}: "
                                  f"{e.details()}") from None
        return json_format.MessageToDict(reply, preserving_proto_field_name=True)

    def prompt_tokens(self, prompt) -> int:
        """The prompt's length in tokens by the server's Tokenize, or None where it has no Tokenize."""
        if prompt.ids is not None:
            return len(prompt.ids)
        ids = self.tokenize(prompt)
        return None if ids is None else len(ids)

    def tokenize(self, prompt) -> list:
        """The prompt's token ids by the server's Tokenize, or None where it has no Tokenize."""
        message = self.pb2.TokenizeRequest()
        if prompt.text is not None:
            message.text = prompt.text
        else:
            message.chat.messages.extend(self.pb2.ChatMessage(role=r, content=c)
                                         for r, c in prompt.messages)
        try:
            return list(self.stub.Tokenize(message, timeout=self.timeout_s).ids)
        except grpc.RpcError as e:
            if e.code() == grpc.StatusCode.UNIMPLEMENTED:
                return None
            raise ConnectionError(f"Tokenize of prompt '{prompt.name}' on {self.target} failed: "
                                  f"{e.code().name}: {e.details()}") from None

    def generate(self, req: GenRequest) -> GenResult:
        message = build_request(self.pb2, req)
        result = GenResult(ok=True, seed=req.seed)
        result.t_send = time.perf_counter()
        try:
            return read_stream(self.pb2, self.stub.Generate(message, timeout=self.timeout_s),
                               req, result)
        except grpc.RpcError as e:
            result.t_end = time.perf_counter()
            result.ok, result.error = False, f"{e.code().name}: {e.details()}"
            return result

    def close(self) -> None:
        self.channel.close()
