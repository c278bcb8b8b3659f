"""Distils the DFlash2 drafter from the target: the target writes continuations of training
prompts (greedy and sampled, as it will serve), then the drafter learns, on blocks anchored in
those continuations, to predict the target's own next tokens from its taps (position-decayed
cross-entropy plus the selector's loss)."""
import time

import torch

from .dflash2 import DFlash2Drafter, causal_lm_features, drafter_loss, gamma_for_block, sample_anchors
from .train_target import StepPlan, autocast, lr_at, make_optimizer


@torch.no_grad()
def distill(target, prompts, new_tokens, batch, device, seed, sampled_share=0.25,
            temperature=0.7, top_k=20, log=print):
    """prompts: list of 1-D token tensors, each at least `min_len` long (cut to the same length
    per batch). Returns (ids [n, P + new], loss_mask [n, P + new]) with mask 1 on the target's
    tokens."""
    g = torch.Generator(device=device).manual_seed(seed)
    out_ids, out_mask = [], []
    plen = min(p.numel() for p in prompts)
    start = time.time()
    for i in range(0, len(prompts), batch):
        chunk = torch.stack([p[-plen:] for p in prompts[i : i + batch]]).to(device)
        sampled = (i // batch) % round(1 / sampled_share) == 0 if sampled_share else False
        with autocast(device):
            new = target.generate(chunk, new_tokens, temperature=temperature if sampled else 0.0,
                                  top_k=top_k, generator=g)
        ids = torch.cat([chunk, new], dim=1).cpu()
        mask = torch.zeros_like(ids)
        mask[:, plen:] = 1
        out_ids.append(ids)
        out_mask.append(mask)
        if (i // batch) % 10 == 0:
            log(f"distill: {i + len(chunk)}/{len(prompts)} sequences, {time.time() - start:.0f} s")
    return torch.cat(out_ids), torch.cat(out_mask)


def train(config, target, ids, loss_mask, *, steps, batch, anchors_per_seq, lr, warmup, weight_decay,
          seed, device, time_budget_s=None, noise_std=0.0, log=print):
    """Returns (drafter, history). The target stays frozen; its embedding and head are shared."""
    torch.manual_seed(seed)
    drafter = DFlash2Drafter(config)
    drafter.init_weights(torch.Generator().manual_seed(seed))
    drafter.to(device)
    for p in target.parameters():
        p.requires_grad_(False)
    opt = make_optimizer(drafter, lr, weight_decay)
    g = torch.Generator().manual_seed(seed + 1)
    gamma = gamma_for_block(config.block_size)
    history = []
    plan = StepPlan(steps, time_budget_s, device, "drafter", log)
    step = 0
    n = ids.shape[0]
    while plan.running(step):
        plan.before(step)
        for group in opt.param_groups:
            group["lr"] = lr_at(step, plan.total, lr, warmup)
        rows = torch.randint(0, n, (batch,), generator=g)
        x = ids[rows].to(device)
        m = loss_mask[rows].to(device)
        anchors, valid = sample_anchors(m, anchors_per_seq, torch.Generator(device=device).manual_seed(seed + step))
        with autocast(device):
            taps = causal_lm_features(target, x, config.target_layer_ids)
            if noise_std:
                taps = taps + noise_std * torch.randn_like(taps)
            loss, stats = drafter_loss(drafter, target.model.embed_tokens, target.lm_head, taps, x, m,
                                       anchors, valid, gamma)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(drafter.parameters(), 1.0)
        opt.step()
        if step % 50 == 0 or plan.is_last(step):
            entry = {"step": step, "loss": round(loss.item(), 4), **{k: round(v, 4) for k, v in stats.items()},
                     "seconds": plan.seconds()}
            history.append(entry)
            log(f"drafter: {entry}")
        step += 1
    return drafter, history
