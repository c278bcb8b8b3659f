"""Trains the demo target: next-token loss on random windows of the tokenized training stream,
AdamW with warmup and cosine decay, bf16 autocast on CUDA. Deterministic for a seed and a step
count; with steps='auto' it times the first steps and fits the count to a time budget."""
import math
import time

import torch
import torch.nn.functional as F

from .qwen3 import Qwen3ForCausalLM


def lr_at(step, steps, peak, warmup, floor=0.1):
    if step < warmup:
        return peak * (step + 1) / warmup
    t = (step - warmup) / max(1, steps - warmup)
    return peak * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * min(1.0, t))))


def windows(stream, batch, seq, generator):
    """batch random windows of seq + 1 tokens from the 1-D token stream."""
    starts = torch.randint(0, stream.numel() - seq - 1, (batch,), generator=generator)
    return torch.stack([stream[s : s + seq + 1] for s in starts.tolist()])


def make_optimizer(model, lr, weight_decay):
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    plain = [p for n, p in model.named_parameters() if p.dim() < 2]
    kwargs = {"fused": True} if torch.cuda.is_available() else {}
    return torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                              {"params": plain, "weight_decay": 0.0}],
                             lr=lr, betas=(0.9, 0.95), eps=1e-8, **kwargs)


@torch.no_grad()
def evaluate(model, stream, seq, batches, batch, device, seed):
    """Mean next-token loss over fixed windows of a held-out stream."""
    model.eval()
    g = torch.Generator().manual_seed(seed)
    total, count = 0.0, 0
    for _ in range(batches):
        w = windows(stream, batch, seq, g).to(device)
        with autocast(device):
            logits, _ = model(w[:, :-1])
        total += F.cross_entropy(logits.float().flatten(0, 1), w[:, 1:].flatten(), reduction="sum").item()
        count += w[:, 1:].numel()
    model.train()
    return total / count


def autocast(device):
    if device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return torch.autocast("cpu", enabled=False)


def train(config, stream, heldout, *, steps, batch, seq, lr, warmup, weight_decay, seed, device,
          time_budget_s=None, log=print, eval_every=200):
    """Returns (model, history). stream/heldout: 1-D int64 token tensors."""
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(config)
    model.init_weights(torch.Generator().manual_seed(seed))
    model.to(device)
    opt = make_optimizer(model, lr, weight_decay)
    g = torch.Generator().manual_seed(seed + 1)
    history = []
    planned = steps if steps != "auto" else None
    start = time.time()
    step = 0
    while planned is None or step < planned:
        if planned is None and step in (5, 25) and device.type == "cuda":
            torch.cuda.synchronize()  # host time equals GPU time only at a sync
        if planned is None and step == 5:
            warm = time.time()  # the first steps include CUDA's start-up, so they are not timed
        if planned is None and step == 25:
            per_step = (time.time() - warm) / 20
            planned = max(40, 25 + int((time_budget_s - (time.time() - start)) / per_step))
            log(f"target: {per_step * 1e3:.1f} ms a step, planning {planned} steps for {time_budget_s:.0f} s")
        total = planned or 10_000
        for group in opt.param_groups:
            group["lr"] = lr_at(step, total, lr, warmup)
        w = windows(stream, batch, seq, g).to(device, non_blocking=True)
        with autocast(device):
            logits, _ = model(w[:, :-1])
            loss = F.cross_entropy(logits.float().flatten(0, 1), w[:, 1:].flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 50 == 0 or step + 1 == planned:
            entry = {"step": step, "loss": round(loss.item(), 4), "lr": round(opt.param_groups[0]["lr"], 6),
                     "seconds": round(time.time() - start, 1)}
            if heldout is not None and heldout.numel() > seq + 1 and (step % eval_every == 0 or step + 1 == planned):
                entry["heldout_loss"] = round(evaluate(model, heldout, seq, 4, batch // 4 or 1, device, seed), 4)
            history.append(entry)
            log(f"target: {entry}")
        step += 1
    return model, history
