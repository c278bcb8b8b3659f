#!/usr/bin/env python3
"""The demo pair's whole recipe, in two stages that each fit one GPU call:

    recipe.py target  --out DIR   text -> tokenizer -> bf16 qwen3 target (+ held-out text, prompts)
    recipe.py drafter --out DIR --target DENSE_DIR --tokenizer-dir DIR
                                  target continuations -> DFlash2 drafter

Between them the target is quantized with twinspan-quantize and written back as dense weights
(twinspan-exl3 dequant-model), so the drafter learns the EXL3 target it will serve with.
Everything is seeded; `--smoke` runs tiny sizes on the CPU to check the code path. Each stage
writes `log.json` (data, sizes, seeds, wall times, losses) beside its outputs."""
import argparse
import array
import json
import os
import random
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from twinspan_train import corpus, safetensors_io, tokenizer_train  # noqa: E402
from twinspan_train import train_drafter as drafter_stage  # noqa: E402
from twinspan_train import train_target as target_stage  # noqa: E402
from twinspan_train.dflash2 import DFlash2Config, count_params  # noqa: E402
from twinspan_train.qwen3 import Qwen3Config, Qwen3ForCausalLM  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
START = time.time()


def log(msg):
    print(f"[{time.time() - START:7.1f} s] {msg}", flush=True)


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")


def device_of(args):
    return torch.device("cuda" if torch.cuda.is_available() and not args.smoke else "cpu")


def save_sharded(tensors, folder, shard_bytes):
    """HF layout: model.safetensors, or shards + model.safetensors.index.json past shard_bytes."""
    total = sum(t.numel() * t.element_size() for t in tensors.values())
    if total <= shard_bytes:
        safetensors_io.save(tensors, os.path.join(folder, "model.safetensors"))
        return
    shards, current, size = [], {}, 0
    for name in sorted(tensors):
        nbytes = tensors[name].numel() * tensors[name].element_size()
        if current and size + nbytes > shard_bytes:
            shards.append(current)
            current, size = {}, 0
        current[name] = tensors[name]
        size += nbytes
    shards.append(current)
    weight_map = {}
    for i, shard in enumerate(shards):
        fname = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        safetensors_io.save(shard, os.path.join(folder, fname))
        weight_map.update({name: fname for name in shard})
    write_json(os.path.join(folder, "model.safetensors.index.json"),
               {"metadata": {"total_size": total}, "weight_map": weight_map})


def load_dense(folder):
    index = os.path.join(folder, "model.safetensors.index.json")
    if not os.path.exists(index):
        return safetensors_io.load(os.path.join(folder, "model.safetensors"))
    with open(index) as f:
        files = sorted(set(json.load(f)["weight_map"].values()))
    out = {}
    for fname in files:
        out.update(safetensors_io.load(os.path.join(folder, fname)))
    return out


# --- stage 1: tokenizer and target ----------------------------------------------------------

def gather(args):
    roots = args.roots or corpus.default_roots()
    log(f"corpus: scanning {roots}")
    docs = corpus.scan(roots)
    train, held = corpus.split(docs, args.heldout_percent)
    code = corpus.cap([d for d in train if d.kind == "code"], args.code_mb << 20)
    prose = corpus.cap([d for d in train if d.kind == "prose"], args.prose_mb << 20)
    stats = {
        "roots": roots,
        "files_scanned_unique": len(docs),
        "train_code_files": len(code), "train_code_bytes": sum(len(d.text) for d in code),
        "train_prose_files": len(prose), "train_prose_bytes": sum(len(d.text) for d in prose),
        "heldout_files": len(held), "heldout_bytes": sum(len(d.text) for d in held),
        "heldout_percent": args.heldout_percent,
    }
    log(f"corpus: {stats}")
    return code, prose, held, stats


def token_stream(tok, texts, separator):
    """Every text's ids followed by the separator, as one int64 tensor."""
    ids = array.array("q")
    for i in range(0, len(texts), 4096):
        for enc in tok.encode_batch(texts[i : i + 4096]):
            ids.extend(enc.ids)
            ids.append(separator)
    return torch.frombuffer(ids, dtype=torch.int64).clone() if len(ids) else torch.zeros(0, dtype=torch.int64)


def heldout_prompts(held, tok, seed, count):
    """Bench prompts from held-out files: code completions cut after a documented function's
    docstring, and chat asks made the way training's chat samples are."""
    rng = random.Random(seed)
    prompts = []
    for d in held:
        if d.kind == "code":
            prompts += [p for p in corpus.completion_prompts(d) if 20 <= len(tok.encode(p).ids) <= 400]
    rng.shuffle(prompts)
    code = [{"name": f"code-{i}", "kind": "code", "prompt": p} for i, p in enumerate(prompts[:count])]
    chat_pairs = corpus.chat_samples(held, seed + 1, 10 * count)
    chat_code = [u for u, a in chat_pairs if a.startswith("```")][:count]
    chat_prose = [u for u, a in chat_pairs if not a.startswith("```")][:count]
    chat = [{"name": f"chat-{i}", "kind": "chat", "messages": [{"role": "user", "content": u}]}
            for i, u in enumerate(chat_code)]
    chat += [{"name": f"ask-{i}", "kind": "chat", "messages": [{"role": "user", "content": u}]}
             for i, u in enumerate(chat_prose)]
    return code + chat


def stage_target(args):
    device = device_of(args)
    os.makedirs(args.out, exist_ok=True)
    target_dir = os.path.join(args.out, "target")
    os.makedirs(target_dir, exist_ok=True)
    code, prose, held, data_stats = gather(args)
    chat = corpus.chat_samples(code + prose, args.seed, args.chat_samples)
    log(f"corpus: {len(chat)} chat samples")
    texts = [d.text for d in code + prose] + [corpus.render_chat(u, a) for u, a in chat]
    random.Random(args.seed).shuffle(texts)

    t0 = time.time()
    sample, size = [], 0
    for t in texts:  # the first texts (already shuffled) up to the BPE sample size
        if size > args.bpe_sample_mb << 20:
            break
        sample.append(t)
        size += len(t)
    bpe_vocab = args.vocab - 32
    tok = tokenizer_train.train_bpe(sample, bpe_vocab)
    tok, _ = tokenizer_train.renumber_by_frequency(tok, sample[: max(1, len(sample) // 4)])
    added = tokenizer_train.add_qwen3_tokens(tok)
    tok_seconds = time.time() - t0
    mask_id = max(added.values()) + 1
    log(f"tokenizer: {tok.get_vocab_size()} tokens ({bpe_vocab} BPE + {len(added)} added) in "
        f"{tok_seconds:.0f} s; mask id {mask_id}; vocab rows {args.vocab}")
    with open(os.path.join(HERE, "qwen3_chat_template.jinja")) as f:
        template = f.read()
    tok.save(os.path.join(target_dir, "tokenizer.json"))
    write_json(os.path.join(target_dir, "tokenizer_config.json"), tokenizer_train.tokenizer_config(template))

    t0 = time.time()
    eot = added["<|endoftext|>"]
    stream = token_stream(tok, texts, eot)
    held_stream = token_stream(tok, [d.text for d in held], eot)
    log(f"tokenize: {stream.numel()} training tokens, {held_stream.numel()} held-out, "
        f"{time.time() - t0:.0f} s")
    counts = torch.bincount(stream, minlength=args.vocab)
    order = torch.argsort(counts, descending=True)
    cum = counts[order].cumsum(0).double() / counts.sum()
    coverage = {str(n): round(float(cum[n - 1]), 5) for n in (1024, 2048, 3072, 4096, 5120, 6144, 7168)
                if n <= args.vocab}
    prefix_cov = {str(n): round(float(counts[:n].sum() / counts.sum()), 5)
                  for n in (1024, 2048, 3072, 4096, 5120, 6144, 7168) if n <= args.vocab}

    cfg = Qwen3Config(vocab_size=args.vocab, hidden_size=args.hidden, intermediate_size=args.intermediate,
                      num_hidden_layers=args.layers, num_attention_heads=args.heads,
                      num_key_value_heads=args.kv_heads, head_dim=args.head_dim,
                      eos_token_id=added["<|im_end|>"], max_position_embeddings=args.seq * 2)
    model, history = target_stage.train(
        cfg, stream, held_stream, steps=args.steps if args.steps == "auto" else int(args.steps),
        batch=args.batch, seq=args.seq, lr=args.lr, warmup=args.warmup, weight_decay=0.1,
        seed=args.seed, device=device, time_budget_s=args.time_budget, log=log)
    model = model.to(torch.bfloat16).cpu()
    write_json(os.path.join(target_dir, "config.json"), cfg.to_hf())
    write_json(os.path.join(target_dir, "generation_config.json"),
               {"eos_token_id": [added["<|im_end|>"], eot], "pad_token_id": eot, "do_sample": False})
    save_sharded(model.state_dict(), target_dir, args.shard_mb << 20)

    # Held-out text for perplexity, the bench's prompts and reference encodings for the tokenizer.
    held_code = "".join(d.text + "\n" for d in held if d.kind == "code")[: args.heldout_text_bytes]
    held_prose = "".join(d.text + "\n" for d in held if d.kind == "prose")[: args.heldout_text_bytes]
    with open(os.path.join(args.out, "heldout_code.txt"), "w") as f:
        f.write(held_code)
    with open(os.path.join(args.out, "heldout_prose.txt"), "w") as f:
        f.write(held_prose)
    prompts = heldout_prompts(held, tok, args.seed, args.prompts)
    with open(os.path.join(args.out, "heldout_prompts.jsonl"), "w") as f:
        for p in prompts:
            f.write(json.dumps(p) + "\n")
    samples = [held_code[i : i + 2000] for i in range(0, min(len(held_code), 40000), 2000)]
    samples += [held_prose[i : i + 2000] for i in range(0, min(len(held_prose), 40000), 2000)]
    samples += [corpus.render_chat(p["messages"][0]["content"]) for p in prompts if p["kind"] == "chat"]
    with open(os.path.join(args.out, "tokenizer_reference.jsonl"), "w") as f:
        for s, enc in zip(samples, tok.encode_batch(samples)):
            f.write(json.dumps({"text": s, "ids": enc.ids}) + "\n")
    write_json(os.path.join(args.out, "target_log.json"), {
        "stage": "target", "seed": args.seed, "device": str(device),
        "torch": torch.__version__, "gpu": torch.cuda.get_device_name() if device.type == "cuda" else None,
        "data": data_stats, "chat_samples": len(chat),
        "tokenizer": {"bpe_vocab": bpe_vocab, "added": added, "mask_token_id": mask_id,
                      "vocab_rows": args.vocab, "seconds": round(tok_seconds, 1),
                      "coverage_top_n": coverage, "coverage_id_prefix": prefix_cov},
        "tokens": {"train": stream.numel(), "heldout": held_stream.numel()},
        "model": {**cfg.to_hf(), "parameters": count_params(model)},
        "train": {"batch": args.batch, "seq": args.seq, "lr": args.lr, "warmup": args.warmup,
                  "steps": history[-1]["step"] + 1, "history": history},
        "prompts": len(prompts), "seconds": round(time.time() - START, 1),
    })
    log(f"target: done, {count_params(model)} parameters")


# --- stage 2: drafter -------------------------------------------------------------------------

def load_target(folder, device):
    cfg = Qwen3Config.from_hf(os.path.join(folder, "config.json"))
    model = Qwen3ForCausalLM(cfg)
    weights = load_dense(folder)
    model.load_state_dict({k: v.float() for k, v in weights.items() if k in model.state_dict()})
    return model.to(device).eval(), cfg


def distill_prompts(args, tok, count, length, seed):
    """`count` windows of `length` tokens from training documents (never held-out ones); half of
    them end in a chat ask (after a document's tail and <|endoftext|>, as training packed them)
    so the drafter also learns the replies the target writes."""
    code, prose, _, _ = gather(args)
    rng = random.Random(seed)
    docs = code + prose
    eot = tok.token_to_id("<|endoftext|>")
    windows = []
    for enc in tok.encode_batch([d.text for d in rng.sample(docs, min(len(docs), count))]):
        if len(enc.ids) >= length + 8:
            s = rng.randrange(0, len(enc.ids) - length)
            windows.append(enc.ids[s : s + length])
    out = [torch.tensor(w) for w in windows[: count - count // 2]]
    chats = corpus.chat_samples(docs, seed, count // 2)
    for i, enc in enumerate(tok.encode_batch([corpus.render_chat(u) for u, _ in chats])):
        if windows and len(enc.ids) < length:
            filler = windows[i % len(windows)] + [eot]
            out.append(torch.tensor((filler + enc.ids)[-length:]))
    rng.shuffle(out)
    return out


def stage_drafter(args):
    from tokenizers import Tokenizer

    device = device_of(args)
    os.makedirs(args.out, exist_ok=True)
    target, tcfg = load_target(args.target, device)
    tok = Tokenizer.from_file(os.path.join(args.tokenizer_dir, "tokenizer.json"))
    t0 = time.time()
    prompts = distill_prompts(args, tok, args.sequences, args.prompt_len, args.seed)
    log(f"distill: {len(prompts)} prompts of {args.prompt_len} tokens in {time.time() - t0:.0f} s")
    t0 = time.time()
    ids, mask = drafter_stage.distill(target, prompts, args.new_tokens, args.gen_batch, device,
                                      args.seed, sampled_share=args.sampled_share, log=log)
    distill_seconds = time.time() - t0
    log(f"distill: {ids.shape} in {distill_seconds:.0f} s")
    written = ids[mask.bool()]
    counts = torch.bincount(written, minlength=tcfg.vocab_size).double()
    coverage = {str(n): round(float(counts[:n].sum() / counts.sum()), 5)
                for n in range(512, tcfg.vocab_size + 1, 512)}
    log(f"distill: the target's own tokens inside [0, N): {coverage}")
    write_json(os.path.join(args.out, "distill_coverage.json"),
               {"tokens": int(written.numel()), "coverage_id_prefix": coverage,
                "tail_tokens": int(counts[tcfg.vocab_size - 128:].sum())})
    for layers in [int(x) for x in str(args.layers).split(",")]:
        train_one_drafter(args, target, tcfg, ids, mask, layers, distill_seconds, device)


def train_one_drafter(args, target, tcfg, ids, mask, layers, distill_seconds, device):
    name = f"drafter-{layers}l"
    drafter_dir = os.path.join(args.out, name)
    os.makedirs(drafter_dir, exist_ok=True)
    cfg = DFlash2Config(hidden_size=tcfg.hidden_size, intermediate_size=args.intermediate,
                        num_hidden_layers=layers, num_attention_heads=tcfg.num_attention_heads,
                        num_key_value_heads=tcfg.num_key_value_heads, head_dim=tcfg.head_dim,
                        rms_norm_eps=tcfg.rms_norm_eps, rope_theta=tcfg.rope_theta,
                        vocab_size=tcfg.vocab_size, num_target_layers=tcfg.num_hidden_layers,
                        target_layer_ids=tuple(int(x) for x in args.taps.split(",")),
                        block_size=args.block, mask_token_id=args.mask_token_id,
                        selector_rank=args.selector_rank, selector_top_k=args.selector_top_k)
    t0 = time.time()
    drafter, history = drafter_stage.train(
        cfg, target, ids, mask, steps=args.steps if args.steps == "auto" else int(args.steps),
        batch=args.batch, anchors_per_seq=args.anchors, lr=args.lr, warmup=args.warmup,
        weight_decay=0.01, seed=args.seed, device=device, time_budget_s=args.time_budget,
        noise_std=args.noise, log=log)
    train_seconds = time.time() - t0
    drafter = drafter.to(torch.bfloat16).cpu()
    write_json(os.path.join(drafter_dir, "config.json"), cfg.to_hf())
    save_sharded(drafter.state_dict(), drafter_dir, args.shard_mb << 20)
    write_json(os.path.join(args.out, f"{name}_log.json"), {
        "stage": "drafter", "seed": args.seed, "device": str(device), "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name() if device.type == "cuda" else None,
        "target": args.target, "distill": {"sequences": int(ids.shape[0]), "prompt_len": args.prompt_len,
                                           "new_tokens": args.new_tokens, "sampled_share": args.sampled_share,
                                           "seconds": round(distill_seconds, 1)},
        "model": {**cfg.to_hf(), "parameters": count_params(drafter)},
        "train": {"batch": args.batch, "anchors": args.anchors, "lr": args.lr, "noise_std": args.noise,
                  "steps": history[-1]["step"] + 1, "seconds": round(train_seconds, 1), "history": history},
        "seconds": round(time.time() - START, 1),
    })
    log(f"{name}: done, {count_params(drafter)} parameters")


def stage_calibration(args):
    """Training-split text (never held-out files: the same content-hash rule) for the quantizer's
    --calibration, from the folders of the machine it runs on."""
    code, prose, _, stats = gather(args)
    rng = random.Random(args.seed)
    docs = code + prose
    rng.shuffle(docs)
    chunks, size = [], 0
    for d in docs:
        if size >= args.mb << 20:
            break
        chunks.append(d.text)
        size += len(d.text)
    with open(args.out, "w") as f:
        f.write("\n".join(chunks))
    log(f"calibration: {len(chunks)} training files, {size} bytes -> {args.out}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="stage", required=True)
    c = sub.add_parser("calibration", help="training-split text for twinspan-quantize --calibration")
    c.add_argument("--out", required=True)
    c.add_argument("--mb", type=int, default=4)
    c.add_argument("--seed", type=int, default=20261203)
    c.add_argument("--roots", nargs="*")
    c.add_argument("--heldout-percent", type=int, default=3)
    c.add_argument("--code-mb", type=int, default=240)
    c.add_argument("--prose-mb", type=int, default=60)
    c.add_argument("--smoke", action="store_true")
    for name in ("target", "drafter"):
        s = sub.add_parser(name)
        s.add_argument("--out", required=True)
        s.add_argument("--seed", type=int, default=20261203)
        s.add_argument("--roots", nargs="*", help="folders to read text from (default: this Python's)")
        s.add_argument("--heldout-percent", type=int, default=3)
        s.add_argument("--code-mb", type=int, default=240)
        s.add_argument("--prose-mb", type=int, default=60)
        s.add_argument("--steps", default="auto")
        s.add_argument("--time-budget", type=float, default=240.0, help="seconds of training for --steps auto")
        s.add_argument("--shard-mb", type=int, default=15)
        s.add_argument("--smoke", action="store_true", help="tiny sizes on the CPU")
    t = sub.choices["target"]
    t.add_argument("--vocab", type=int, default=8192)
    t.add_argument("--hidden", type=int, default=384)
    t.add_argument("--intermediate", type=int, default=1024)
    t.add_argument("--layers", type=int, default=8)
    t.add_argument("--heads", type=int, default=6)
    t.add_argument("--kv-heads", type=int, default=2)
    t.add_argument("--head-dim", type=int, default=64)
    t.add_argument("--seq", type=int, default=1024)
    t.add_argument("--batch", type=int, default=96)
    t.add_argument("--lr", type=float, default=2e-3)
    t.add_argument("--warmup", type=int, default=200)
    t.add_argument("--chat-samples", type=int, default=120000)
    t.add_argument("--prompts", type=int, default=24)
    t.add_argument("--bpe-sample-mb", type=int, default=48)
    t.add_argument("--heldout-text-bytes", type=int, default=300000)
    d = sub.choices["drafter"]
    d.add_argument("--target", required=True, help="dense HF folder of the (dequantized) target")
    d.add_argument("--tokenizer-dir", required=True)
    d.add_argument("--mask-token-id", type=int, required=True)
    d.add_argument("--taps", default="1,4,6")
    d.add_argument("--layers", default="1,2", help="drafter layer counts, one drafter each")
    d.add_argument("--intermediate", type=int, default=1024)
    d.add_argument("--block", type=int, default=16)
    d.add_argument("--selector-rank", type=int, default=32)
    d.add_argument("--selector-top-k", type=int, default=8)
    d.add_argument("--sequences", type=int, default=24576)
    d.add_argument("--prompt-len", type=int, default=128)
    d.add_argument("--new-tokens", type=int, default=256)
    d.add_argument("--gen-batch", type=int, default=1024)
    d.add_argument("--sampled-share", type=float, default=0.25)
    d.add_argument("--batch", type=int, default=64)
    d.add_argument("--anchors", type=int, default=32)
    d.add_argument("--lr", type=float, default=1e-3)
    d.add_argument("--warmup", type=int, default=100)
    d.add_argument("--noise", type=float, default=0.0)
    args = p.parse_args()
    if args.stage == "calibration":
        return stage_calibration(args)
    if args.smoke:
        for k, v in {"code_mb": 2, "prose_mb": 1, "batch": 4, "time_budget": 5.0,
                     "heldout_percent": 30}.items():
            setattr(args, k, v)
        if args.stage == "target":
            for k, v in {"vocab": 1024, "hidden": 128, "intermediate": 256, "layers": 2, "heads": 2, "bpe_sample_mb": 1,
                         "kv_heads": 1, "seq": 64, "warmup": 5, "chat_samples": 200, "prompts": 4,
                         "heldout_text_bytes": 20000}.items():
                setattr(args, k, v)
        else:
            for k, v in {"sequences": 16, "prompt_len": 32, "new_tokens": 32, "gen_batch": 8,
                         "anchors": 4, "intermediate": 256, "taps": "0,1", "warmup": 5,
                         "block": 8}.items():
                setattr(args, k, v)
    torch.manual_seed(args.seed)
    (stage_target if args.stage == "target" else stage_drafter)(args)


if __name__ == "__main__":
    main()
