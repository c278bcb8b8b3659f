"""A DFlash2 drafter in plain PyTorch, with the published checkpoint's tensor names, and its
training objective (../shared/reference/dflash-drafters.md sections 1, 3 and 4): KV injection of
the fused target taps into every layer, grouped dynamic causal convolutions around each sublayer,
and the pairwise candidate selector. The target's embedding and head are borrowed, frozen."""
import dataclasses
import math

import torch
import torch.nn.functional as F
from torch import nn

from .qwen3 import MLP, RMSNorm, apply_rope, attention, rope_tables


@dataclasses.dataclass
class DFlash2Config:
    hidden_size: int = 512
    intermediate_size: int = 1536
    num_hidden_layers: int = 1
    num_attention_heads: int = 8
    num_key_value_heads: int = 4
    head_dim: int = 64
    rms_norm_eps: float = 1e-6
    rope_theta: float = 1e6
    vocab_size: int = 8192
    num_target_layers: int = 8
    target_layer_ids: tuple = (1, 4, 6)
    block_size: int = 16
    mask_token_id: int = 8191
    conv_kernel_size: int = 2
    conv_group_size: int = 16
    selector_rank: int = 32
    selector_top_k: int = 8
    max_position_embeddings: int = 4096

    def to_hf(self):
        return {
            "architectures": ["DFlash2DraftModel"],
            "attention_bias": False,
            "attention_dropout": 0.0,
            "bos_token_id": None,
            "dflash_config": {
                "block_size": self.block_size,
                "conv_group_size": self.conv_group_size,
                "conv_kernel_size": self.conv_kernel_size,
                "mask_token_id": self.mask_token_id,
                "selector_rank": self.selector_rank,
                "selector_top_k": self.selector_top_k,
                "target_layer_ids": list(self.target_layer_ids),
            },
            "dtype": "bfloat16",
            "eos_token_id": None,
            "head_dim": self.head_dim,
            "hidden_act": "silu",
            "hidden_size": self.hidden_size,
            "initializer_range": 0.02,
            "intermediate_size": self.intermediate_size,
            "is_causal": False,
            "layer_types": ["full_attention"] * self.num_hidden_layers,
            "max_position_embeddings": self.max_position_embeddings,
            "model_type": "qwen3",
            "num_attention_heads": self.num_attention_heads,
            "num_hidden_layers": self.num_hidden_layers,
            "num_key_value_heads": self.num_key_value_heads,
            "num_target_layers": self.num_target_layers,
            "rms_norm_eps": self.rms_norm_eps,
            "rope_parameters": {"rope_theta": self.rope_theta, "rope_type": "default"},
            "tie_word_embeddings": False,
            "use_cache": True,
            "vocab_size": self.vocab_size,
        }

    @staticmethod
    def from_hf(c):
        d = c["dflash_config"]
        rope = c.get("rope_parameters") or {}
        return DFlash2Config(
            hidden_size=c["hidden_size"],
            intermediate_size=c["intermediate_size"],
            num_hidden_layers=c["num_hidden_layers"],
            num_attention_heads=c["num_attention_heads"],
            num_key_value_heads=c["num_key_value_heads"],
            head_dim=c["head_dim"],
            rms_norm_eps=c["rms_norm_eps"],
            rope_theta=rope.get("rope_theta", c.get("rope_theta", 1e6)),
            vocab_size=c["vocab_size"],
            num_target_layers=c["num_target_layers"],
            target_layer_ids=tuple(d["target_layer_ids"]),
            block_size=d.get("block_size", c.get("block_size")),
            mask_token_id=d["mask_token_id"],
            conv_kernel_size=d["conv_kernel_size"],
            conv_group_size=d["conv_group_size"],
            selector_rank=d["selector_rank"],
            selector_top_k=d["selector_top_k"],
        )


class DynamicConv(nn.Module):
    """GroupedDynamicCausalConv: per-slot taps over the block, base kernel + a per-group offset
    projected from the sublayer's normed input. Side 0 mixes the input, side 1 the output."""

    def __init__(self, c):
        super().__init__()
        self.kc = c.conv_kernel_size
        self.groups = c.hidden_size // c.conv_group_size
        self.group_size = c.conv_group_size
        self.base_kernel = nn.Parameter(torch.zeros(2, self.kc, c.hidden_size))
        self.kernel_projection = nn.Linear(c.hidden_size, 2 * self.kc * self.groups, bias=False)
        with torch.no_grad():
            self.base_kernel[:, 0] = 1.0  # identity at start, as the reference trains it
            self.kernel_projection.weight.zero_()

    def dynamic(self, x):
        """x [..., B, H] -> d [..., B, 2, Kc, G]."""
        return self.kernel_projection(x).view(*x.shape[:-1], 2, self.kc, self.groups)

    def mix(self, x, d, side):
        """y_t = sum_o (base[side][o] + d[t, side, o]) * x_{t-o}, taps inside the block only."""
        out = None
        for o in range(self.kc):
            shifted = x if o == 0 else F.pad(x, (0, 0, o, 0))[..., : x.shape[-2], :]
            coeff = d[..., side, o, :].repeat_interleave(self.group_size, dim=-1)
            term = (self.base_kernel[side, o] + coeff) * shifted
            out = term if out is None else out + term
        return out


class DrafterAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.q_proj = nn.Linear(c.hidden_size, c.num_attention_heads * c.head_dim, bias=False)
        self.k_proj = nn.Linear(c.hidden_size, c.num_key_value_heads * c.head_dim, bias=False)
        self.v_proj = nn.Linear(c.hidden_size, c.num_key_value_heads * c.head_dim, bias=False)
        self.o_proj = nn.Linear(c.num_attention_heads * c.head_dim, c.hidden_size, bias=False)
        self.q_norm = RMSNorm(c.head_dim, c.rms_norm_eps)
        self.k_norm = RMSNorm(c.head_dim, c.rms_norm_eps)

    def heads(self, x, n):
        b, t, _ = x.shape
        return x.view(b, t, n, self.c.head_dim)

    def forward(self, x, ctx, rope_blk, rope_ctx, mask):
        """x [b, Q, H] block rows, ctx [b, S, H] fused context; mask bool [b, 1, Q, S + Q]."""
        c = self.c
        q = apply_rope(self.q_norm(self.heads(self.q_proj(x), c.num_attention_heads)).transpose(1, 2), *rope_blk)
        kb = apply_rope(self.k_norm(self.heads(self.k_proj(x), c.num_key_value_heads)).transpose(1, 2), *rope_blk)
        kc = apply_rope(self.k_norm(self.heads(self.k_proj(ctx), c.num_key_value_heads)).transpose(1, 2), *rope_ctx)
        vb = self.heads(self.v_proj(x), c.num_key_value_heads).transpose(1, 2)
        vc = self.heads(self.v_proj(ctx), c.num_key_value_heads).transpose(1, 2)
        out = attention(q, torch.cat([kc, kb], dim=2), torch.cat([vc, vb], dim=2), mask=mask)
        b, _, t, _ = out.shape
        return self.o_proj(out.transpose(1, 2).reshape(b, t, -1))


class DrafterLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.input_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.self_attn = DrafterAttention(c)
        self.post_attention_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.mlp = MLP(c.hidden_size, c.intermediate_size)
        self.attention_conv = DynamicConv(c)
        self.mlp_conv = DynamicConv(c)
        self.block = c.block_size

    def blocks(self, x):
        """[b, N*B, H] -> [b, N, B, H] so the convolutions stay inside each block."""
        b, q, h = x.shape
        return x.view(b, q // self.block, self.block, h)

    def sublayer(self, h, norm, conv, fn):
        x = self.blocks(norm(h))
        d = conv.dynamic(x)
        y = fn(conv.mix(x, d, 0).flatten(1, 2))
        return h + conv.mix(self.blocks(y), d, 1).flatten(1, 2)

    def forward(self, h, ctx, rope_blk, rope_ctx, mask):
        h = self.sublayer(h, self.input_layernorm, self.attention_conv,
                          lambda y: self.self_attn(y, ctx, rope_blk, rope_ctx, mask))
        return self.sublayer(h, self.post_attention_layernorm, self.mlp_conv, self.mlp)


class CandidateSelector(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.hidden_projection = nn.Linear(c.hidden_size, c.selector_rank, bias=False)
        # The published names have no ".weight": plain parameters, not embeddings.
        self.predecessor_codebook = nn.Parameter(torch.zeros(c.vocab_size, c.selector_rank))
        self.successor_codebook = nn.Parameter(torch.zeros(c.vocab_size, c.selector_rank))

    def pair_scores(self, hp, prev, cand):
        """hp [..., r], prev [...], cand [..., k] -> [..., k] pairwise terms."""
        left = self.predecessor_codebook[prev] * hp
        return (left[..., None, :] * self.successor_codebook[cand]).sum(-1)


class DFlash2Drafter(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.config = c
        n_f = len(c.target_layer_ids)
        self.fc = nn.Linear(n_f * c.hidden_size, c.hidden_size, bias=False)
        self.hidden_norm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.layers = nn.ModuleList(DrafterLayer(c) for _ in range(c.num_hidden_layers))
        self.norm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.candidate_selector = CandidateSelector(c)

    def init_weights(self, generator, std=0.02):
        for name, p in self.named_parameters():
            if "conv" in name or name.endswith("norm.weight"):
                continue  # identity convolutions and unit norms, set at construction
            with torch.no_grad():
                p.copy_(torch.randn(p.shape, generator=generator) * std)

    def fuse(self, taps):
        """taps [b, S, n_f * H] (concatenated target layer outputs) -> context rows [b, S, H]."""
        return self.hidden_norm(self.fc(taps))

    def forward(self, block_embeds, block_positions, ctx, ctx_positions, mask):
        """block_embeds [b, N*B, H] -> final-normed hidden [b, N*B, H]."""
        c = self.config
        rope_blk = rope_tables(block_positions, c.head_dim, c.rope_theta, block_embeds.dtype)
        rope_ctx = rope_tables(ctx_positions, c.head_dim, c.rope_theta, block_embeds.dtype)
        h = block_embeds
        for layer in self.layers:
            h = layer(h, ctx, rope_blk, rope_ctx, mask)
        return self.norm(h)


def block_mask(anchors, ctx_len, block):
    """anchors [b, N] -> bool [b, 1, N*B, S + N*B]: a block row sees context p < its anchor and
    every row of its own block (bidirectional), nothing of other blocks."""
    b, n = anchors.shape
    dev = anchors.device
    row_anchor = anchors.repeat_interleave(block, dim=1)  # [b, N*B]
    ctx_vis = torch.arange(ctx_len, device=dev)[None, None, :] < row_anchor[:, :, None]
    blk_id = torch.arange(n * block, device=dev) // block
    blk_vis = (blk_id[:, None] == blk_id[None, :]).expand(b, -1, -1)
    return torch.cat([ctx_vis, blk_vis], dim=2)[:, None]


def position_weights(block, gamma, device):
    """w_k = exp(-(k - 1) / gamma) for slots k = 1..B-1; slot 0 (the anchor) weighs nothing."""
    k = torch.arange(block, device=device, dtype=torch.float32)
    w = torch.exp(-(k - 1) / gamma)
    w[0] = 0
    return w


def drafter_loss(drafter, embed, lm_head, taps, ids, loss_mask, anchors, valid, gamma,
                 selector_weight=1.0):
    """One training step's loss over sampled blocks.

    taps [b, S, n_f*H] target features of every position; ids [b, S]; loss_mask [b, S] (1 where
    the token is the target's own output); anchors [b, N] positions with loss_mask[a] and
    loss_mask[a+1] set, valid [b, N] which of them count. Returns (loss, stats)."""
    c = drafter.config
    bsz, s = ids.shape
    blk = c.block_size
    dev = ids.device
    ctx = drafter.fuse(taps)
    offs = torch.arange(blk, device=dev)
    pos = anchors[:, :, None] + offs  # [b, N, B]
    in_bounds = pos < s
    pos_c = pos.clamp(max=s - 1)
    labels = torch.gather(ids, 1, pos_c.flatten(1)).view_as(pos)
    block_ids = torch.full_like(labels, c.mask_token_id)
    block_ids[:, :, 0] = labels[:, :, 0]
    weight = position_weights(blk, gamma, dev) * in_bounds * valid[:, :, None]
    weight = weight * torch.gather(loss_mask, 1, pos_c.flatten(1)).view_as(pos).float()
    mask = block_mask(anchors, s, blk)
    ctx_positions = torch.arange(s, device=dev).expand(bsz, s)
    hidden = drafter(embed(block_ids.flatten(1)), pos.flatten(1), ctx, ctx_positions, mask)
    logits = lm_head(hidden).float()  # [b, N*B, V]
    flat_w = weight.flatten(1)
    ce = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), reduction="none").view_as(flat_w)
    denom = flat_w.sum().clamp(min=1e-6)
    base = (ce * flat_w).sum() / denom

    # Selector: teacher-forced walk over the slot's top-k, labelled by the true token's index.
    sel = drafter.candidate_selector
    unary, cand = logits.detach().topk(c.selector_top_k, dim=-1)  # [b, N*B, k]
    prev = torch.cat([labels[:, :, :1], labels[:, :, :-1]], dim=2).flatten(1)
    hp = sel.hidden_projection(hidden)
    scores = unary + sel.pair_scores(hp.float(), prev, cand)
    hit = cand == labels.flatten(1)[..., None]
    found = hit.any(-1)
    target_idx = hit.float().argmax(-1)
    sel_w = flat_w * found
    sel_ce = F.cross_entropy(scores.flatten(0, 1), target_idx.flatten(), reduction="none").view_as(flat_w)
    sel_loss = (sel_ce * sel_w).sum() / sel_w.sum().clamp(min=1e-6)

    with torch.no_grad():
        greedy_ok = (logits.argmax(-1) == labels.flatten(1)).float()
        walk_ok = (torch.gather(cand, -1, scores.argmax(-1, keepdim=True))[..., 0]
                   == labels.flatten(1)).float()
        counted = (flat_w > 0).float()
        stats = {
            "base_ce": base.item(),
            "selector_ce": sel_loss.item(),
            "unary_acc": ((greedy_ok * counted).sum() / counted.sum().clamp(min=1)).item(),
            "walk_acc": ((walk_ok * counted).sum() / counted.sum().clamp(min=1)).item(),
            "recall": ((found.float() * counted).sum() / counted.sum().clamp(min=1)).item(),
        }
    return base + selector_weight * sel_loss, stats


@torch.no_grad()
def greedy_walk(drafter, logits, hidden, anchor, top_k=None):
    """The serving walk for one block: logits [B-1, V] and hidden [B-1, H] of slots 1..B-1 ->
    proposals [B-1], unary [B-1, k] and candidates [B-1, k] (sorted by logit)."""
    sel = drafter.candidate_selector
    k = top_k or drafter.config.selector_top_k
    unary, cand = logits.float().topk(k, dim=-1)
    hp = sel.hidden_projection(hidden).float()
    prev = anchor
    out = []
    for s in range(logits.shape[0]):
        score = unary[s] + sel.pair_scores(hp[s], torch.as_tensor(prev), cand[s])
        prev = int(cand[s, int(score.argmax())])
        out.append(prev)
    return torch.tensor(out), unary, cand


def causal_lm_features(target, ids, tap_ids):
    """Runs the frozen target: ids [b, S] -> concatenated taps [b, S, n_f * H]."""
    _, taps = target(ids, taps=tuple(tap_ids), logits=False)
    return torch.cat(taps, dim=-1)


def sample_anchors(loss_mask, count, generator):
    """`count` anchor positions per row, drawn without replacement among those where
    loss_mask[a] and loss_mask[a+1] are set, sorted; and which of them are valid (a row with
    fewer such positions fills up with invalid ones, which drafter_loss weighs zero)."""
    ok = loss_mask[:, :-1].bool() & loss_mask[:, 1:].bool()
    b, s1 = ok.shape
    noise = torch.rand(b, s1, generator=generator, device=loss_mask.device)
    noise = noise.masked_fill(~ok, 2.0)
    anchors = noise.argsort(dim=1)[:, :count].sort(dim=1).values
    return anchors, torch.gather(ok, 1, anchors)


def count_params(module):
    return sum(p.numel() for p in module.parameters())


def gamma_for_block(block):
    """The position-decay gamma the DFlash paper pairs with each block size."""
    return {16: 7.0, 10: 5.0, 8: 4.0}.get(block, max(1.0, math.sqrt(block) * 1.75))
