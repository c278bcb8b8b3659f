"""Writes the seed corpora of the fuzz targets added with the drafter-link, tokenizer, template,
config, checkpoint and EXL3 fuzzers (serving_request and safetensors_header have their own). Seeds
are valid inputs and near misses, small so that fuzzing stays fast. Run from the repository root:

    /usr/bin/python3 tests/fuzz/make_fuzz_corpora.py tests/fuzz/corpus

Existing files are kept: a finding added to a corpus as a regression input stays there.
"""
import hashlib
import json
import os
import struct
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "integration", "py"))


def write(out, target, name, data):
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def read(*parts):
    with open(os.path.join(ROOT, *parts), "rb") as f:
        return f.read()


def safetensors(tensors, metadata=None):
    """tensors: {name: (dtype, shape, bytes)} -> a safetensors image (header padded to 8)."""
    header, blobs, offset = {}, [], 0
    for name, (dtype, shape, data) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        base = 8 + n
        out = {}
        for name, t in header.items():
            if name == "__metadata__":
                continue
            f.seek(base + t["data_offsets"][0])
            out[name] = (t["dtype"], t["shape"], f.read(t["data_offsets"][1] - t["data_offsets"][0]))
        return out


def length_prefixed(messages, width=2):
    fmt = "<H" if width == 2 else "<I"
    return b"".join(struct.pack(fmt, len(m)) + m for m in messages)


def router_config(out):
    valid = {"listen": "127.0.0.1:50050", "metrics": "127.0.0.1:9400", "health_interval_ms": 1000,
             "startup_timeout_s": 120, "max_retries": 1, "max_message_mb": 64,
             "pools": [{"variant": "two-span", "weight": 50, "workers": ["127.0.0.1:50061"],
                        "launch": [{"binary": "twinspan-drafter", "gpu": "0",
                                    "args": ["--model", "/m/d", "--listen", "127.0.0.1:50062"]},
                                   {"binary": "twinspan-target", "gpu": "0,1", "name": "t",
                                    "args": ["--model", "/m/t", "--device", "cuda:1"]}]},
                       {"variant": "full", "weight": 50, "workers": ["10.0.0.7:50051"]}]}
    write(out, "router_config", "valid.json", json.dumps(valid))
    write(out, "router_config", "minimal.json", '{"pools":[{"variant":"none","workers":["a:1"]}]}')
    write(out, "router_config", "bad_device.json", json.dumps(
        {"pools": [{"variant": "x", "workers": ["a:1"], "launch": [
            {"binary": "b", "gpu": "0", "args": ["--device=cuda:3", "--drafter-device", "cpu"]}]}]}))
    write(out, "router_config", "duplicate.json",
          '{"pools":[{"variant":"a","workers":["w:1"]},{"variant":"a","weight":-1,"workers":[]}]}')
    write(out, "router_config", "types.json", '{"listen":5,"pools":"no","max_retries":1e300}')


def model_config(out):
    target = json.loads(read("models", "demo", "target", "config.json"))
    drafter = json.loads(read("models", "demo", "drafter", "config.json"))
    qwen35 = {"model_type": "qwen3_5", "text_config": {
        "model_type": "qwen3_5_text", "vocab_size": 1024, "hidden_size": 64,
        "intermediate_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 16, "partial_rotary_factor": 0.25,
        "attn_output_gate": True, "linear_num_key_heads": 2, "linear_num_value_heads": 4,
        "linear_key_head_dim": 16, "linear_value_head_dim": 16, "linear_conv_kernel_dim": 4,
        "layer_types": ["linear_attention", "linear_attention", "linear_attention",
                        "full_attention"], "eos_token_id": [1, 2]}}
    for selector, name, config in ((0, "hf_target", target), (1, "target", target),
                                   (0, "hf_drafter", drafter), (2, "drafter", drafter),
                                   (1, "qwen35", qwen35), (0, "hf_qwen35", qwen35)):
        write(out, "model_config", name + ".json", bytes([selector]) + json.dumps(config).encode())
    write(out, "model_config", "quantization.json",
          b"\x03" + json.dumps(target.get("quantization_config", {})).encode())
    write(out, "model_config", "dflash.json", b"\x04" + json.dumps(drafter).encode())
    broken = dict(target, num_attention_heads=5, layer_types=["full_attention"])
    write(out, "model_config", "broken_target.json", b"\x01" + json.dumps(broken).encode())


def tokenizer(out):
    demo = read("tests", "fuzz", "data", "demo_tokenizer", "tokenizer.json")
    write(out, "tokenizer_json", "demo.json", demo)
    t = json.loads(demo)
    small = dict(t)
    small["model"] = dict(t["model"], merges=t["model"]["merges"][:20])
    small["normalizer"] = {"type": "Sequence", "normalizers": [{"type": "NFC"}, {
        "type": "Replace", "pattern": {"String": "  "}, "content": " "}]}
    write(out, "tokenizer_json", "small.json", json.dumps(small))
    write(out, "tokenizer_json", "no_model.json", '{"version":"1.0","model":{"type":"WordPiece"}}')
    texts = {"ascii": "Hello, world! The quick brown fox.", "code": "def f(x):\n\treturn x ** 2\n",
             "utf8": "h\u00e9llo w\u00f6rld \u4f60\u597d \U0001f600", "specials":
             "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", "digits": "12345 67.89",
             "spaces": "   a  \n\n  b\t\t", "nfc": "e\u0301 A\u030a"}
    for name, text in texts.items():
        for parse_special in (0, 1):
            write(out, "tokenizer_encode", "%s_%d" % (name, parse_special),
                  bytes([parse_special]) + text.encode())
    write(out, "tokenizer_encode", "invalid_utf8", b"\x01ab\xff\xfe\xc3")


def chat_template(out):
    cases = json.loads(read("tests", "tokenizer", "chat_cases.json"))
    for i, case in enumerate(cases):
        for mode in (0, 1):
            write(out, "chat_template", "case%02d_%d" % (i, mode),
                  bytes([mode]) + json.dumps(case["messages"]).encode())
    tools = {"messages": [{"role": "user", "content": "weather?"},
                          {"role": "assistant", "content": "", "tool_calls": [
                              {"function": {"name": "get", "arguments": {"city": "Oslo"}}}]},
                          {"role": "tool", "content": "rain"}],
             "tools": [{"type": "function", "function": {"name": "get", "parameters": {}}}],
             "enable_thinking": False, "add_generation_prompt": True}
    write(out, "chat_template", "tools_0", b"\x00" + json.dumps(tools).encode())
    write(out, "chat_template", "parts_0", b"\x00" + json.dumps([{"role": "user", "content": [
        {"type": "text", "text": "look"}, {"type": "image"}]}]).encode())
    demo = json.loads(read("tests", "fuzz", "data", "demo_tokenizer", "tokenizer_config.json"))
    write(out, "chat_template", "source_demo", b"\x02" + demo["chat_template"].encode())
    write(out, "chat_template", "source_rich",
          b"\x02" + read("tests", "tokenizer", "qwen3_5_style_template.jinja"))
    write(out, "chat_template", "source_loops", b"\x02" + (
        "{%- set ns = namespace(n=0) %}{% for m in messages|reverse %}{% if loop.first %}"
        "{{ m.role|upper }}{% endif %}{% set ns.n = ns.n + m.content|length %}{% endfor %}"
        "{{ ns.n }}{{ raise_exception('x') if ns.n < 0 }}{{ messages|tojson }}").encode())


def checkpoints(out):
    for name in sorted(os.listdir(os.path.join(HERE, "corpus", "safetensors_header"))):
        data = read("tests", "fuzz", "corpus", "safetensors_header", name)
        write(out, "safetensors_file", "single_" + name, b"\x00" + data)
    a = safetensors({"a": ("F32", [2, 2], struct.pack("<4f", 1, 2, 3, 4)),
                     "b": ("BF16", [3], b"\x80\x3f\x00\x40\x40\x40")})
    b = safetensors({"c": ("I64", [2], struct.pack("<2q", 7, -7)), "d": ("BOOL", [1], b"\x01")})
    index = json.dumps({"metadata": {"total_size": 40}, "weight_map": {
        "a": "model-00001-of-00002.safetensors", "b": "model-00001-of-00002.safetensors",
        "c": "model-00002-of-00002.safetensors", "d": "model-00002-of-00002.safetensors"}}).encode()
    write(out, "safetensors_file", "sharded", b"\x01" + struct.pack("<H", len(index)) + index +
          struct.pack("<I", len(a)) + a + b)
    bad_index = json.dumps({"weight_map": {"a": "model-00002-of-00002.safetensors",
                                           "zz": "../escape.safetensors"}}).encode()
    write(out, "safetensors_file", "sharded_bad", b"\x01" + struct.pack("<H", len(bad_index)) +
          bad_index + struct.pack("<I", len(a)) + a + b)

    demo = read_safetensors(os.path.join(ROOT, "models", "demo", "target", "model.safetensors"))
    prefix = "model.layers.0.self_attn.k_proj"
    linear = {n[len(prefix) - 6:]: v for n, v in demo.items() if n.startswith(prefix + ".")}
    write(out, "exl3_tensors", "k_proj_mul1", safetensors(linear))
    with_bias = dict(linear)
    with_bias["k_proj.bias"] = ("F16", [128], b"\x00\x3c" * 128)
    write(out, "exl3_tensors", "k_proj_bias", safetensors(with_bias))
    mcg = {n.replace(".mul1", ".mcg"): v for n, v in linear.items()}
    write(out, "exl3_tensors", "k_proj_mcg", safetensors(mcg))
    legacy = {n: v for n, v in linear.items() if not n.endswith((".suh", ".svh"))}
    legacy["k_proj.su"] = ("I16", [24], b"\x01\x00" * 24)
    legacy["k_proj.sv"] = ("I16", [8], b"\xff\xff" * 8)
    write(out, "exl3_tensors", "k_proj_legacy", safetensors(legacy))


def draft_link(out):
    import twinspan_procs
    stubs = tempfile.mkdtemp(prefix="twinspan-fuzz-stubs-")
    twinspan_procs.generate_stubs(os.path.join(ROOT, "proto"), stubs)
    from twinspan.v1 import drafter_pb2 as d
    hidden, layers = 4, 2

    def taps(ids, width=hidden * layers):
        rows = []
        for i in ids:  # the toy drafter checks that a row starts with its id
            rows += [float(i)] + [0.5] * (width - 1)
        return d.Tensor(dtype=d.DTYPE_F32, shape=[len(ids), width],
                        data=struct.pack("<%df" % len(rows), *rows))

    hello = d.DraftRequest(hello=d.Hello(
        protocol=d.DRAFT_PROTOCOL_V1, vocab_size=64, tokenizer_sha256="toy-tokenizer",
        target_fingerprint="toy-fingerprint", tap_form=d.TAP_FORM_RAW, tap_dtype=d.DTYPE_F32,
        target_name="fuzz"))
    open_ = d.DraftRequest(open=d.Open(stream_id=1, request_id="r1", prompt_ids=[3, 4, 5],
                                       prompt_taps=taps([3, 4, 5]), pending=6,
                                       tap_form=d.TAP_FORM_RAW))
    commit = d.DraftRequest(commit=d.Commit(stream_id=1, round=1, ids=[6, 7], taps=taps([6, 7]),
                                            pending=8, tap_form=d.TAP_FORM_RAW))
    stale = d.DraftRequest(commit=d.Commit(stream_id=1, round=1, ids=[6], taps=taps([6]),
                                           pending=8))
    truncated = d.DraftRequest(commit=d.Commit(stream_id=1, round=2, ids=[8, 9], pending=10,
                                               taps=taps([8, 9], width=5)))
    close = d.DraftRequest(close=d.Close(stream_id=1))
    s = lambda *ms: b"\x00" + length_prefixed([m.SerializeToString() for m in ms])  # noqa: E731
    write(out, "draft_link", "drafter_session", s(hello, open_, commit, close))
    write(out, "draft_link", "drafter_stale_truncated", s(hello, open_, commit, stale, truncated))
    write(out, "draft_link", "drafter_no_hello", s(open_, hello))
    fused = d.DraftRequest(hello=d.Hello(
        protocol=d.DRAFT_PROTOCOL_V1, vocab_size=64, tokenizer_sha256="toy-tokenizer",
        target_fingerprint="toy-fingerprint", tap_form=d.TAP_FORM_FUSED, tap_dtype=d.DTYPE_BF16,
        drafter_fingerprint="toy-drafter"))
    write(out, "draft_link", "drafter_fused_bf16", s(fused, open_))

    ack = d.DraftReply(hello_ack=d.HelloAck(
        protocol=d.DRAFT_PROTOCOL_V1, vocab_size=64, tokenizer_sha256="toy-tokenizer",
        target_fingerprint="toy-fingerprint", block_size=4, head_variant="toy", max_streams=8,
        target_layer_ids=[0, 1], tap_form=d.TAP_FORM_RAW, tap_dtype=d.DTYPE_F32))
    p = lambda stream, rnd, ids: d.DraftReply(  # noqa: E731
        proposal=d.Proposal(stream_id=stream, round=rnd, ids=ids))
    err = d.DraftReply(error=d.StreamError(stream_id=1, round=3, code=3, message="bad taps"))
    t = lambda *ms: b"\x01" + length_prefixed([m.SerializeToString() for m in ms])  # noqa: E731
    write(out, "draft_link", "target_rounds", t(ack, p(1, 1, [1, 2, 3]), p(1, 2, [4, 5, 6]), err))
    write(out, "draft_link", "target_malformed", t(ack, p(2, 1, [1]), p(1, 5, [1]),
                                                   p(1, 1, [70, 1, 2]), p(1, 2, [1, 2, 3, 4, 5])))
    write(out, "draft_link", "target_bad_ack", t(d.DraftReply(hello_ack=d.HelloAck(
        vocab_size=64, tokenizer_sha256="toy-tokenizer", target_fingerprint="toy-fingerprint",
        block_size=4, target_layer_ids=[9]))))


def main(out):
    router_config(out)
    model_config(out)
    tokenizer(out)
    chat_template(out)
    checkpoints(out)
    draft_link(out)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "corpus"))
