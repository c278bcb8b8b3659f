#!/usr/bin/env python3
"""Assembles models/demo from the recipe's outputs: the EXL3 target (twinspan-quantize), the
DFlash2 drafter with the two-span head variant chosen for it, the held-out split the bench and
the tests read, and the stages' logs. Refuses to write more than 40 MB.

    tools/train/assemble_demo.py --target Q4_DIR --drafter DRAFTER_DIR --stage1 DIR --stage2 DIR \
        --two-span 0:6144,8064:8192 --out models/demo
"""
import argparse
import json
import os
import shutil
import sys

LIMIT_BYTES = 40 << 20
TARGET_FILES = ("config.json", "generation_config.json", "model.safetensors",
                "quantization_config.json", "tokenizer.json", "tokenizer_config.json")


def copy(src_dir, names, dst_dir):
    os.makedirs(dst_dir, exist_ok=True)
    for name in names:
        shutil.copyfile(os.path.join(src_dir, name), os.path.join(dst_dir, name))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--target", required=True, help="EXL3 target folder written by twinspan-quantize")
    p.add_argument("--drafter", required=True, help="drafter folder written by recipe.py drafter")
    p.add_argument("--stage1", required=True, help="recipe.py target's output folder")
    p.add_argument("--stage2", required=True, help="recipe.py drafter's output folder")
    p.add_argument("--drafter-log", required=True, help="the chosen drafter's log json")
    p.add_argument("--quantize-log", help="twinspan-quantize's progress output")
    p.add_argument("--two-span", required=True, help="span list of the two-span head variant")
    p.add_argument("--out", required=True)
    args = p.parse_args()

    tmp = args.out.rstrip("/") + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    copy(args.target, TARGET_FILES, os.path.join(tmp, "target"))
    drafter_out = os.path.join(tmp, "drafter")
    copy(args.drafter, ("model.safetensors",), drafter_out)
    copy(args.target, ("tokenizer.json", "tokenizer_config.json"), drafter_out)
    with open(os.path.join(args.drafter, "config.json")) as f:
        config = json.load(f)
    config["head_variants"] = {"two-span": args.two_span}
    with open(os.path.join(drafter_out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    held = os.path.join(tmp, "heldout")
    os.makedirs(held)
    for src, dst in (("heldout_prompts.jsonl", "prompts.jsonl"), ("heldout_code.txt", "code.txt"),
                     ("heldout_prose.txt", "prose.txt"), ("tokenizer_reference.jsonl", "tokenizer_reference.jsonl")):
        shutil.copyfile(os.path.join(args.stage1, src), os.path.join(held, dst))
    logs = os.path.join(tmp, "logs")
    os.makedirs(logs)
    shutil.copyfile(os.path.join(args.stage1, "target_log.json"), os.path.join(logs, "target_log.json"))
    shutil.copyfile(args.drafter_log, os.path.join(logs, "drafter_log.json"))
    shutil.copyfile(os.path.join(args.stage2, "distill_coverage.json"), os.path.join(logs, "distill_coverage.json"))
    if args.quantize_log:
        shutil.copyfile(args.quantize_log, os.path.join(logs, "quantize.log"))

    total = sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(tmp) for f in files)
    if total > LIMIT_BYTES:
        shutil.rmtree(tmp)
        sys.exit(f"assemble_demo: {total} bytes is over the {LIMIT_BYTES} byte limit of models/demo")
    keep = [n for n in ("README.md",) if os.path.exists(os.path.join(args.out, n))]
    for name in keep:
        shutil.copyfile(os.path.join(args.out, name), os.path.join(tmp, name))
    shutil.rmtree(args.out, ignore_errors=True)
    os.rename(tmp, args.out)
    print(f"assemble_demo: wrote {args.out} ({total / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
