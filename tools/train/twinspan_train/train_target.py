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


class StepPlan:
    """A fixed number of steps, or "auto": steps 5-25 are timed (after CUDA's start-up) and the
    plan becomes as many steps as fit time_budget_s."""

    def __init__(self, steps, time_budget_s, device, name, log):
        self.planned = steps if steps != "auto" else None
        self.time_budget_s, self.device, self.name, self.log = time_budget_s, device, name, log
        self.start = time.time()
        self.warm = None

    def running(self, step):
        return self.planned is None or step < self.planned

    def before(self, step):
        """Called at the top of each step; fixes the plan at step 25 when it is "auto"."""
        if self.planned is not None:
            return
        if step in (5, 25) and self.device.type == "cuda":
            torch.cuda.synchronize()  # host time equals GPU time only at a sync
        if step == 5:
            self.warm = time.time()
        if step == 25:
            per_step = (time.time() - self.warm) / 20
            self.planned = max(40, 25 + int((self.time_budget_s - (time.time() - self.start)) / per_step))
            self.log(f"{self.name}: {per_step * 1e3:.1f} ms a step, planning {self.planned} steps for "
                     f"{self.time_budget_s:.0f} s")

    @property
    def total(self):
        """The schedule's length for the learning rate (a long stand-in until the plan is fixed)."""
        return self.planned or 10_000

    def is_last(self, step):
        return step + 1 == self.planned

    def seconds(self):
        return round(time.time() - self.start, 1)


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
    plan = StepPlan(steps, time_budget_s, device, "target", log)
    step = 0
    while plan.running(step):
        plan.before(step)
        for group in opt.param_groups:
            group["lr"] = lr_at(step, plan.total, lr, warmup)
        w = windows(stream, batch, seq, g).to(device, non_blocking=True)
        with autocast(device):
            logits, _ = model(w[:, :-1])
            loss = F.cross_entropy(logits.float().flatten(0, 1), w[:, 1:].flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 50 == 0 or plan.is_last(step):
            entry = {"step": step, "loss": round(loss.item(), 4), "lr": round(opt.param_groups[0]["lr"], 6),
                     "seconds": plan.seconds()}
            if heldout is not None and heldout.numel() > seq + 1 and (step % eval_every == 0 or plan.is_last(step)):
                entry["heldout_loss"] = round(evaluate(model, heldout, seq, 4, batch // 4 or 1, device, seed), 4)
            history.append(entry)
            log(f"target: {entry}")
        step += 1
    return model, history
