"""Writes the seed corpus of serving_request_fuzz: one file per case, a selector byte (0: Generate,
1: Tokenize) then the request's protobuf encoding. Run from the repository root:

    /usr/bin/python3 tests/fuzz/make_serving_request_corpus.py tests/fuzz/corpus/serving_request
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration",
                                "py"))
import twinspan_procs  # noqa: E402


def main(out):
    stubs = tempfile.mkdtemp(prefix="twinspan-fuzz-stubs-")
    twinspan_procs.generate_stubs(os.path.join(os.path.dirname(__file__), "..", "..", "proto"),
                                  stubs)
    from twinspan.v1 import serving_pb2 as pb
    os.makedirs(out, exist_ok=True)
    cases = {}

    def gen(name, **fields):
        r = pb.GenerateRequest(**fields)
        cases["gen_" + name] = b"\x00" + r.SerializeToString()
        return r

    def tok(name, request):
        cases["tok_" + name] = b"\x01" + request.SerializeToString()

    gen("empty")
    gen("prompt", prompt="the quick brown fox")
    gen("prompt_special", prompt="<|im_start|>user\nhi<|im_end|>")
    gen("ids", prompt_ids=pb.TokenIds(ids=[1, 2, 3, 4]))
    gen("ids_outside_vocab", prompt_ids=pb.TokenIds(ids=[1, 2, 100000]))
    gen("ids_empty", prompt_ids=pb.TokenIds())
    gen("ids_too_long", prompt_ids=pb.TokenIds(ids=[5] * 1000))
    chat = pb.ChatMessages(messages=[pb.ChatMessage(role="system", content="be brief"),
                                     pb.ChatMessage(role="user", content="hello there")])
    gen("chat", chat=chat)
    gen("chat_no_generation_prompt",
        chat=pb.ChatMessages(messages=chat.messages, skip_generation_prompt=True,
                             disable_thinking=True))
    gen("chat_empty", chat=pb.ChatMessages())
    gen("chat_no_role", chat=pb.ChatMessages(messages=[pb.ChatMessage(content="x")]))
    gen("chat_many", chat=pb.ChatMessages(
        messages=[pb.ChatMessage(role="user", content="m")] * 300))
    s = pb.SamplingParams(max_tokens=16, temperature=0.7, top_k=40, top_p=0.9, min_p=0.05,
                          stop=["\n\n", "END"], stop_token_ids=[3, 7], ignore_eos=True)
    s.seed.value = 1234
    s.draft.value = False
    gen("sampling_full", prompt="once upon a time", sampling=s)
    gen("sampling_nan", prompt="x", sampling=pb.SamplingParams(temperature=float("nan")))
    gen("sampling_inf_top_p", prompt="x", sampling=pb.SamplingParams(top_p=float("inf")))
    gen("sampling_negative", prompt="x", sampling=pb.SamplingParams(temperature=-1, min_p=-0.5))
    gen("top_k_huge", prompt="x", sampling=pb.SamplingParams(top_k=4000000000))
    gen("max_tokens_huge", prompt="x", sampling=pb.SamplingParams(max_tokens=4294967295))
    gen("stop_empty", prompt="x", sampling=pb.SamplingParams(stop=[""]))
    gen("stop_long", prompt="x", sampling=pb.SamplingParams(stop=["s" * 300]))
    gen("stop_many", prompt="x", sampling=pb.SamplingParams(stop=["a"] * 9))
    gen("stop_ids_outside", prompt="x", sampling=pb.SamplingParams(stop_token_ids=[600]))
    gen("routing_fields", prompt="x", session_key="s-1", head_variant="two-span",
        request_id="r" * 300)
    gen("big_text", prompt="word " * 14000)
    gen("utf8", prompt="h\u00e9llo w\u00f6rld \u4f60\u597d \U0001f600")
    tok("text", pb.TokenizeRequest(text="hello world", add_special_tokens=True))
    tok("text_special", pb.TokenizeRequest(text="<|im_end|>"))
    tok("chat", pb.TokenizeRequest(chat=chat))
    tok("chat_empty", pb.TokenizeRequest(chat=pb.ChatMessages()))
    tok("empty", pb.TokenizeRequest())
    tok("big_text", pb.TokenizeRequest(text="z" * 70000))
    cases["garbage_generate"] = b"\x00\xff\xff\xff\xff\x0f"
    cases["garbage_tokenize"] = b"\x01\x0a\x05ab"
    for name, data in sorted(cases.items()):
        with open(os.path.join(out, name + ".bin"), "wb") as f:
            f.write(data)
    print("wrote %d seeds to %s" % (len(cases), out))


if __name__ == "__main__":
    main(sys.argv[1])
