"""Unit tests of the demo pair's training code that need only torch (no tokenizers, no GPU):
the packed block objective against one block at a time, the loss going down, the corpus rules
and the safetensors round trip. Run: python3 -m unittest discover -s tools/train/tests"""
import os
import sys
import tempfile
import unittest

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from twinspan_train import corpus, safetensors_io  # noqa: E402
from twinspan_train import train_drafter, train_target  # noqa: E402
from twinspan_train.dflash2 import DFlash2Config, DFlash2Drafter, block_mask, sample_anchors  # noqa: E402
from twinspan_train.qwen3 import Qwen3Config, Qwen3ForCausalLM  # noqa: E402

TINY_TARGET = Qwen3Config(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=3,
                          num_attention_heads=4, num_key_value_heads=2, head_dim=16, eos_token_id=1)
TINY_DRAFTER = DFlash2Config(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                             num_attention_heads=4, num_key_value_heads=2, head_dim=16, vocab_size=256,
                             num_target_layers=3, target_layer_ids=(0, 2), block_size=4,
                             mask_token_id=255, conv_group_size=16, selector_rank=8, selector_top_k=4)


def random_drafter(seed):
    torch.manual_seed(seed)
    d = DFlash2Drafter(TINY_DRAFTER)
    d.init_weights(torch.Generator().manual_seed(seed), std=0.1)
    with torch.no_grad():  # non-identity convolutions, so the test sees them
        for layer in d.layers:
            for conv in (layer.attention_conv, layer.mlp_conv):
                conv.base_kernel.add_(0.3 * torch.randn(conv.base_kernel.shape))
                conv.kernel_projection.weight.normal_(0, 0.05)
    return d.eval()


class PackedBlocksTest(unittest.TestCase):
    def test_packed_blocks_equal_one_block_at_a_time(self):
        d = random_drafter(1)
        c = TINY_DRAFTER
        s, blk = 12, c.block_size
        ctx = torch.randn(1, s, c.hidden_size)
        embeds = torch.randn(1, 3 * blk, c.hidden_size)
        anchors = torch.tensor([[2, 5, 9]])
        pos = (anchors[:, :, None] + torch.arange(blk)).flatten(1)
        with torch.no_grad():
            packed = d(embeds, pos, ctx, torch.arange(s)[None], block_mask(anchors, s, blk))
            for j, a in enumerate(anchors[0].tolist()):
                one = d(embeds[:, j * blk : (j + 1) * blk], pos[:, j * blk : (j + 1) * blk], ctx[:, :a],
                        torch.arange(a)[None], block_mask(torch.tensor([[a]]), a, blk))
                torch.testing.assert_close(packed[:, j * blk : (j + 1) * blk], one, atol=1e-5, rtol=1e-5)

    def test_mask_hides_the_anchor_and_later_context(self):
        m = block_mask(torch.tensor([[3]]), 6, 2)[0, 0]
        self.assertEqual(m[:, :6].tolist(), [[True] * 3 + [False] * 3] * 2)
        self.assertTrue(m[:, 6:].all())

    def test_anchors_only_where_the_target_wrote(self):
        mask = torch.tensor([[0, 0, 1, 1, 1, 1, 0, 0]])
        anchors, valid = sample_anchors(mask, 5, torch.Generator().manual_seed(0))
        good = anchors[valid]
        self.assertTrue(all(mask[0, a] and mask[0, a + 1] for a in good.tolist()))
        self.assertEqual(int(valid.sum()), 3)


class TrainingTest(unittest.TestCase):
    def test_target_and_drafter_losses_fall(self):
        torch.manual_seed(0)
        # A stream with structure: repeated short phrases, so a few steps can learn something.
        phrases = [torch.randint(2, 200, (7,)) for _ in range(5)]
        stream = torch.cat([phrases[i % 5] for i in torch.randint(0, 5, (400,)).tolist()])
        model, hist = train_target.train(TINY_TARGET, stream, None, steps=60, batch=8, seq=32, lr=3e-3,
                                         warmup=5, weight_decay=0.0, seed=1, device=torch.device("cpu"),
                                         log=lambda m: None)
        self.assertLess(hist[-1]["loss"], hist[0]["loss"] * 0.8)
        prompts = [stream[i : i + 16] for i in range(0, 320, 20)]
        ids, mask = train_drafter.distill(model.eval(), prompts, 16, 8, torch.device("cpu"), 2,
                                          sampled_share=0.5, log=lambda m: None)
        self.assertEqual(tuple(ids.shape), (16, 32))
        self.assertEqual(int(mask[:, :16].sum()), 0)
        _, dh = train_drafter.train(TINY_DRAFTER, model, ids, mask, steps=40, batch=8, anchors_per_seq=4,
                                    lr=3e-3, warmup=5, weight_decay=0.0, seed=3, device=torch.device("cpu"),
                                    log=lambda m: None)
        self.assertLess(dh[-1]["base_ce"], dh[0]["base_ce"])

    def test_cached_generation_equals_full_recompute(self):
        torch.manual_seed(4)
        model = Qwen3ForCausalLM(TINY_TARGET)
        model.init_weights(torch.Generator().manual_seed(4), std=0.2)
        model.eval()
        prompt = torch.randint(0, 256, (2, 5))
        new = model.generate(prompt, 6)
        seq = prompt
        for _ in range(6):
            logits, _ = model(seq)
            seq = torch.cat([seq, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
        self.assertTrue(torch.equal(new, seq[:, 5:]))


class CorpusTest(unittest.TestCase):
    def test_scan_dedupes_filters_and_splits(self):
        with tempfile.TemporaryDirectory() as root:
            good = 'def add(a, b):\n    """Return the sum of a and b, as integers."""\n    x = a + b\n    return x\n' * 5
            for name, text in [("a.py", good), ("b.py", good), ("c.md", "# Title\n\n" + "word " * 80),
                               ("d.bin", "x" * 500), ("e.py", "y" * 300 + "\n"), ("f.txt", "é" * 300)]:
                with open(os.path.join(root, name), "w") as f:
                    f.write(text)
            docs = corpus.scan([root])
            self.assertEqual(sorted(os.path.basename(d.path) for d in docs), ["a.py", "c.md"])
            train, held = corpus.split(docs, 50)
            self.assertEqual(len(train) + len(held), 2)
            self.assertFalse({d.digest for d in train} & {d.digest for d in held})
            import random
            pairs = corpus.function_samples(docs[[d.kind for d in docs].index("code")], random.Random(0))
            self.assertTrue(pairs and "add(a, b)" in pairs[0][0] and pairs[0][1].startswith("```python"))

    def test_chat_render_is_the_qwen3_template(self):
        self.assertEqual(corpus.render_chat("hi", "yo"),
                         "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nyo<|im_end|>\n")


class SafetensorsTest(unittest.TestCase):
    def test_round_trip(self):
        t = {"a": torch.randn(3, 4).to(torch.bfloat16), "b": torch.arange(5, dtype=torch.int16),
             "c": torch.tensor(7, dtype=torch.int32)}
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "x.safetensors")
            safetensors_io.save(t, path)
            back = safetensors_io.load(path)
        for k in t:
            self.assertTrue(torch.equal(t[k], back[k]), k)


if __name__ == "__main__":
    unittest.main()
