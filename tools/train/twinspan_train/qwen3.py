"""A Qwen3 causal LM in plain PyTorch, with HF's parameter names, so what it trains loads as an HF
`Qwen3ForCausalLM` checkpoint (and in Twinspan's own target). The same module serves training
(causal SDPA over whole sequences), tap capture for the drafter, and batched cached generation."""
import dataclasses
import json
import math

import torch
import torch.nn.functional as F
from torch import nn


@dataclasses.dataclass
class Qwen3Config:
    vocab_size: int = 8192
    hidden_size: int = 512
    intermediate_size: int = 1536
    num_hidden_layers: int = 8
    num_attention_heads: int = 8
    num_key_value_heads: int = 4
    head_dim: int = 64
    rms_norm_eps: float = 1e-6
    rope_theta: float = 1e6
    max_position_embeddings: int = 4096
    eos_token_id: int = 0
    bos_token_id: int = None

    def to_hf(self):
        """config.json as transformers writes it for Qwen3ForCausalLM."""
        return {
            "architectures": ["Qwen3ForCausalLM"],
            "attention_bias": False,
            "attention_dropout": 0.0,
            "bos_token_id": self.bos_token_id,
            "dtype": "bfloat16",
            "eos_token_id": self.eos_token_id,
            "head_dim": self.head_dim,
            "hidden_act": "silu",
            "hidden_size": self.hidden_size,
            "initializer_range": 0.02,
            "intermediate_size": self.intermediate_size,
            "layer_types": ["full_attention"] * self.num_hidden_layers,
            "max_position_embeddings": self.max_position_embeddings,
            "max_window_layers": self.num_hidden_layers,
            "model_type": "qwen3",
            "num_attention_heads": self.num_attention_heads,
            "num_hidden_layers": self.num_hidden_layers,
            "num_key_value_heads": self.num_key_value_heads,
            "rms_norm_eps": self.rms_norm_eps,
            "rope_parameters": {"rope_theta": self.rope_theta, "rope_type": "default"},
            "sliding_window": None,
            "tie_word_embeddings": False,
            "use_cache": True,
            "use_sliding_window": False,
            "vocab_size": self.vocab_size,
        }

    @staticmethod
    def from_hf(path):
        with open(path) as f:
            c = json.load(f)
        rope = c.get("rope_parameters") or {}
        eos = c.get("eos_token_id")
        return Qwen3Config(
            vocab_size=c["vocab_size"],
            hidden_size=c["hidden_size"],
            intermediate_size=c["intermediate_size"],
            num_hidden_layers=c["num_hidden_layers"],
            num_attention_heads=c["num_attention_heads"],
            num_key_value_heads=c["num_key_value_heads"],
            head_dim=c.get("head_dim", c["hidden_size"] // c["num_attention_heads"]),
            rms_norm_eps=c["rms_norm_eps"],
            rope_theta=rope.get("rope_theta", c.get("rope_theta", 1e6)),
            max_position_embeddings=c.get("max_position_embeddings", 4096),
            eos_token_id=eos[0] if isinstance(eos, list) else eos,
            bos_token_id=c.get("bos_token_id"),
        )


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


def rope_tables(positions, head_dim, theta, dtype):
    """cos/sin [..., T, head_dim] for integer positions [..., T], HF's rotate_half layout."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=positions.device).float() / head_dim))
    freqs = positions.float()[..., None] * inv_freq
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def apply_rope(x, cos, sin):
    """x [batch, heads, T, d]; cos/sin [batch, T, d] (or [T, d])."""
    if cos.dim() == 3:
        cos, sin = cos[:, None], sin[:, None]
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


def attention(q, k, v, mask=None, causal=False):
    """q [b, h, Tq, d], k/v [b, hkv, Tk, d]; GQA by repeating k/v. mask: bool [b or 1, 1, Tq, Tk]."""
    if k.shape[1] != q.shape[1]:
        rep = q.shape[1] // k.shape[1]
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal and mask is None)
    scores = (q.float() @ k.float().transpose(-1, -2)) / math.sqrt(q.shape[-1])
    if causal and mask is None:
        tq, tk = q.shape[-2], k.shape[-2]
        mask = torch.ones(tq, tk, dtype=torch.bool, device=q.device).tril(tk - tq)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return (scores.softmax(-1) @ v.float()).to(q.dtype)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.q_proj = nn.Linear(c.hidden_size, c.num_attention_heads * c.head_dim, bias=False)
        self.k_proj = nn.Linear(c.hidden_size, c.num_key_value_heads * c.head_dim, bias=False)
        self.v_proj = nn.Linear(c.hidden_size, c.num_key_value_heads * c.head_dim, bias=False)
        self.o_proj = nn.Linear(c.num_attention_heads * c.head_dim, c.hidden_size, bias=False)
        self.q_norm = RMSNorm(c.head_dim, c.rms_norm_eps)
        self.k_norm = RMSNorm(c.head_dim, c.rms_norm_eps)

    def project(self, x, proj, norm, heads, cos, sin):
        b, t, _ = x.shape
        y = norm(proj(x).view(b, t, heads, self.c.head_dim)).transpose(1, 2)
        return apply_rope(y, cos, sin)

    def forward(self, x, cos, sin, cache=None):
        """cache: None (causal over x) or a dict with 'k'/'v' [b, hkv, T_past, d] to extend."""
        c = self.c
        b, t, _ = x.shape
        q = self.project(x, self.q_proj, self.q_norm, c.num_attention_heads, cos, sin)
        k = self.project(x, self.k_proj, self.k_norm, c.num_key_value_heads, cos, sin)
        v = self.v_proj(x).view(b, t, c.num_key_value_heads, c.head_dim).transpose(1, 2)
        if cache is None:
            out = attention(q, k, v, causal=True)
        else:
            if "k" in cache:
                k = torch.cat([cache["k"], k], dim=2)
                v = torch.cat([cache["v"], v], dim=2)
            cache["k"], cache["v"] = k, v
            out = attention(q, k, v, causal=t > 1)
        return self.o_proj(out.transpose(1, 2).reshape(b, t, -1))


class MLP(nn.Module):
    def __init__(self, hidden, inter):
        super().__init__()
        self.gate_proj = nn.Linear(hidden, inter, bias=False)
        self.up_proj = nn.Linear(hidden, inter, bias=False)
        self.down_proj = nn.Linear(inter, hidden, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.input_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.self_attn = Attention(c)
        self.post_attention_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.mlp = MLP(c.hidden_size, c.intermediate_size)

    def forward(self, h, cos, sin, cache=None):
        h = h + self.self_attn(self.input_layernorm(h), cos, sin, cache)
        return h + self.mlp(self.post_attention_layernorm(h))


class Qwen3Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c.vocab_size, c.hidden_size)
        self.layers = nn.ModuleList(DecoderLayer(c) for _ in range(c.num_hidden_layers))
        self.norm = RMSNorm(c.hidden_size, c.rms_norm_eps)


class Qwen3ForCausalLM(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.config = c
        self.model = Qwen3Model(c)
        self.lm_head = nn.Linear(c.hidden_size, c.vocab_size, bias=False)

    def init_weights(self, generator, std=0.02):
        """Normal(0, std) linears and embedding, residual outputs scaled by depth, unit norms."""
        scale = std / math.sqrt(2 * self.config.num_hidden_layers)
        for name, p in self.named_parameters():
            if name.endswith("norm.weight"):
                nn.init.ones_(p)
            elif name.endswith(("o_proj.weight", "down_proj.weight")):
                with torch.no_grad():
                    p.copy_(torch.randn(p.shape, generator=generator) * scale)
            else:
                with torch.no_grad():
                    p.copy_(torch.randn(p.shape, generator=generator) * std)

    def forward(self, ids, positions=None, caches=None, taps=(), logits=True, last_only=False):
        """ids [b, T] -> (logits [b, T or 1, V] or None, [tap tensors [b, T, H] for each id]).

        Tap i is the output of decoder layer i (HF hidden_states[i + 1]). positions [b, T]
        default to 0..T-1; caches (one dict per layer) extend cached K/V."""
        c = self.config
        b, t = ids.shape
        if positions is None:
            positions = torch.arange(t, device=ids.device).expand(b, t)
        h = self.model.embed_tokens(ids)
        cos, sin = rope_tables(positions, c.head_dim, c.rope_theta, h.dtype)
        out_taps = []
        for i, layer in enumerate(self.model.layers):
            h = layer(h, cos, sin, None if caches is None else caches[i])
            if i in taps:
                out_taps.append(h)
        if not logits:
            return None, out_taps
        if last_only:
            h = h[:, -1:]
        return self.lm_head(self.model.norm(h)), out_taps

    @torch.no_grad()
    def generate(self, prompts, new_tokens, temperature=0.0, top_k=0, generator=None):
        """prompts [b, P] (all the same length) -> [b, new_tokens] continuations, cached."""
        b, p = prompts.shape
        caches = [dict() for _ in self.model.layers]
        positions = torch.arange(p, device=prompts.device).expand(b, p)
        logits, _ = self.forward(prompts, positions, caches, last_only=True)
        out = []
        for step in range(new_tokens):
            nxt = sample(logits[:, -1].float(), temperature, top_k, generator)
            out.append(nxt)
            if step + 1 == new_tokens:
                break
            pos = torch.full((b, 1), p + step, device=prompts.device)
            logits, _ = self.forward(nxt[:, None], pos, caches)
        return torch.stack(out, dim=1)


def sample(logits, temperature, top_k, generator):
    if temperature <= 0:
        return logits.argmax(-1)
    logits = logits / temperature
    if top_k:
        kth = logits.topk(top_k, dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = logits.softmax(-1)
    return torch.multinomial(probs, 1, generator=generator)[:, 0]
