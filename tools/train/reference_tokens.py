#!/usr/bin/env python3
"""Writes models/demo/reference.json: Hugging Face transformers' greedy continuation of a fixed
chat prompt on the demo target's dequantized weights (fp32), which demo_model_test holds our C++
target to. Run where torch and transformers are (the GPU machine):

    twinspan-exl3 dequant-model --in models/demo/target --out DENSE --dtype f32
    tools/train/reference_tokens.py --dense DENSE --tokenizer-dir models/demo/target \
        --out models/demo/reference.json
"""
import argparse
import json

import torch
from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast

MESSAGES = [{"role": "user", "content": "Can you write `is_prime(n)` for me? Return True when n is prime."}]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dense", required=True, help="the target dequantized to an HF fp32 folder")
    p.add_argument("--tokenizer-dir", required=True, help="folder with tokenizer.json and tokenizer_config.json")
    p.add_argument("--tokens", type=int, default=32)
    p.add_argument("--min-accepted", type=int, default=2,
                   help="the drafter's first block must keep at least this many of the greedy tokens")
    p.add_argument("--out", required=True)
    args = p.parse_args()

    with open(f"{args.tokenizer_dir}/tokenizer_config.json") as f:
        template = json.load(f)["chat_template"]
    tokenizer = PreTrainedTokenizerFast(tokenizer_file=f"{args.tokenizer_dir}/tokenizer.json")
    text = tokenizer.apply_chat_template(MESSAGES, chat_template=template, tokenize=False,
                                         add_generation_prompt=True)
    prompt_ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    model = AutoModelForCausalLM.from_pretrained(args.dense, torch_dtype=torch.float32).eval()
    # Plain argmax at every step, through the end-of-turn token too, as the test decodes.
    ids = list(prompt_ids)
    with torch.no_grad():
        for _ in range(args.tokens):
            logits = model(torch.tensor([ids])).logits[0, -1]
            ids.append(int(torch.argmax(logits)))
    greedy = ids[len(prompt_ids):]
    reference = {
        "source": f"transformers {__import__('transformers').__version__} greedy, fp32, on the "
                  "dequantized target",
        "messages": MESSAGES,
        "prompt_ids": prompt_ids,
        "greedy_ids": greedy,
        "greedy_text": tokenizer.decode(greedy),
        "min_accepted": args.min_accepted,
    }
    with open(args.out, "w") as f:
        json.dump(reference, f, indent=1)
        f.write("\n")
    print(f"reference_tokens: {len(prompt_ids)} prompt tokens -> {greedy}\n{reference['greedy_text']!r}")


if __name__ == "__main__":
    main()
