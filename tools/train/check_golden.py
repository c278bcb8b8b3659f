#!/usr/bin/env python3
"""Checks the training models against the reference implementations' golden outputs
(../shared/golden: HF transformers' Qwen3, z-lab's DFlash2), in fp32 on the CPU, so what the recipe
trains is the function Twinspan serves. Prints one line per check; exits 1 on any mismatch.

    tools/train/check_golden.py [GOLDEN_DIR]
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from twinspan_train import safetensors_io  # noqa: E402
from twinspan_train.dflash2 import DFlash2Config, DFlash2Drafter, block_mask, greedy_walk  # noqa: E402
from twinspan_train.qwen3 import Qwen3Config, Qwen3ForCausalLM  # noqa: E402

failures = []


def rel_fro(a, b):
    return float((a.float() - b.float()).norm() / b.float().norm())


def check(name, value, limit):
    ok = value <= limit
    print(f"{'ok  ' if ok else 'FAIL'} {name}: {value:.3g} (limit {limit:g})")
    if not ok:
        failures.append(name)


def check_equal(name, a, b):
    ok = torch.equal(a.long(), b.long())
    detail = "" if ok else f" {a.tolist()} vs {b.tolist()}"
    print(f"{'ok  ' if ok else 'FAIL'} {name}: {a.numel()} ids{detail}")
    if not ok:
        failures.append(name)


def load_target(folder):
    cfg = Qwen3Config.from_hf(os.path.join(folder, "config.json"))
    model = Qwen3ForCausalLM(cfg)
    weights = {k: v.float() for k, v in safetensors_io.load(os.path.join(folder, "model.safetensors")).items()}
    model.load_state_dict(weights)
    return model.eval()


def check_target(golden):
    model = load_target(os.path.join(golden, "hf_qwen3_tiny", "model"))
    ref = safetensors_io.load(os.path.join(golden, "hf_qwen3_tiny", "reference.safetensors"))
    with torch.no_grad():
        for i in range(3):
            ids = ref[f"input_ids_{i}"][None]
            logits, taps = model(ids, taps=(0, 1, 2, 3))
            check(f"qwen3 logits_{i}", rel_fro(logits[0], ref[f"logits_{i}"]), 1e-4)
            check(f"qwen3 layer outputs_{i}", rel_fro(torch.stack(taps)[:, 0], ref[f"layer_outputs_{i}"]), 1e-4)
        new = model.generate(ref["generate_prompt_ids"][None], 16)
        check_equal("qwen3 greedy generate", new[0], ref["generate_new_ids"])
    return model


def check_drafter(golden, target, folder, ref_name):
    base = os.path.join(golden, "dflash2_drafter_tiny")
    with open(os.path.join(base, folder, "config.json")) as f:
        cfg = DFlash2Config.from_hf(json.load(f))
    drafter = DFlash2Drafter(cfg)
    weights = safetensors_io.load(os.path.join(base, folder, "model.safetensors"))
    drafter.load_state_dict({k: v.float() for k, v in weights.items()})
    drafter.eval()
    ref = safetensors_io.load(os.path.join(base, ref_name))
    full = safetensors_io.load(os.path.join(base, "reference.safetensors"))
    with torch.no_grad():
        prompt = full["prompt_ids"][None]
        s = prompt.shape[1]
        _, taps = target(prompt, taps=tuple(cfg.target_layer_ids), logits=False)
        taps = torch.cat(taps, dim=-1)
        if "target_hidden" in ref:
            check(f"{folder} target taps", rel_fro(taps[0], ref["target_hidden"]), 1e-4)
        ctx = drafter.fuse(taps)
        if "context_fc_hidden_norm" in ref:
            check(f"{folder} fused context", rel_fro(ctx[0], ref["context_fc_hidden_norm"]), 1e-4)
        block_ids = ref["block_ids"][None]
        anchors = torch.tensor([[s]])
        mask = block_mask(anchors, s, cfg.block_size)
        positions = torch.arange(s, s + cfg.block_size)[None]
        hidden = drafter(target.model.embed_tokens(block_ids), positions, ctx,
                         torch.arange(s)[None], mask)
        check(f"{folder} drafter hidden", rel_fro(hidden[0], ref["drafter_hidden"]), 1e-4)
        logits = target.lm_head(hidden[0, 1:])
        check(f"{folder} draft logits", rel_fro(logits, ref["draft_logits"]), 1e-4)
        proposals, unary, cand = greedy_walk(drafter, logits, hidden[0, 1:], int(block_ids[0, 0]))
        check_equal(f"{folder} selector candidates", cand, ref["selector_candidate_ids"])
        check_equal(f"{folder} proposals", proposals, ref["draft_token_ids"])


def main():
    golden = sys.argv[1] if len(sys.argv) > 1 else os.environ.get(
        "TWINSPAN_GOLDEN", os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "golden"))
    torch.manual_seed(0)
    target = check_target(golden)
    check_drafter(golden, target, "model", "reference.safetensors")
    check_drafter(golden, target, "model_identity", "reference_identity.safetensors")
    print(f"{len(failures)} failed" if failures else "all golden checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
