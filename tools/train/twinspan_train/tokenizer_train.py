"""Trains the demo's byte-level BPE with Hugging Face `tokenizers`: Qwen3's normalizer,
pre-tokenizer regex and byte-level mapping, Qwen3's added tokens appended after the merges (so the
specials sit at the end of the vocabulary), and ids renumbered by measured frequency on the
training text, so the two-span head's first span [0, N) holds the N most frequent tokens."""
import collections
import json

# Qwen3's added tokens in their order, with its `special` flags (tokenizer.json added_tokens).
QWEN3_ADDED = (
    ("<|endoftext|>", True), ("<|im_start|>", True), ("<|im_end|>", True),
    ("<|object_ref_start|>", True), ("<|object_ref_end|>", True), ("<|box_start|>", True),
    ("<|box_end|>", True), ("<|quad_start|>", True), ("<|quad_end|>", True),
    ("<|vision_start|>", True), ("<|vision_end|>", True), ("<|vision_pad|>", True),
    ("<|image_pad|>", True), ("<|video_pad|>", True), ("<tool_call>", False),
    ("</tool_call>", False), ("<|fim_prefix|>", False), ("<|fim_middle|>", False),
    ("<|fim_suffix|>", False), ("<|fim_pad|>", False), ("<|repo_name|>", False),
    ("<|file_sep|>", False), ("<tool_response>", False), ("</tool_response>", False),
    ("<think>", False), ("</think>", False),
)
QWEN3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+"
               r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


# Qwen3's tokenizer.json pieces around the BPE model, as it ships them.
BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
QWEN3_LAYOUT = {
    "normalizer": {"type": "NFC"},
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": QWEN3_SPLIT}, "behavior": "Isolated", "invert": False},
        BYTE_LEVEL]},
    "post_processor": BYTE_LEVEL,
    "decoder": BYTE_LEVEL,
}
QWEN3_BPE_FLAGS = {"dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                   "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False,
                   "ignore_merges": False}


def train_bpe(texts, bpe_vocab):
    """A Tokenizer with bpe_vocab byte-level BPE tokens (ids 0..bpe_vocab-1), no added tokens."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN3_SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    trainer = trainers.BpeTrainer(
        vocab_size=bpe_vocab, min_frequency=2, show_progress=False, special_tokens=[],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer=trainer, length=len(texts))
    return tok


def renumber_by_frequency(tok, sample_texts):
    """The same merges in Qwen3's layout (normalizer, pre-tokenizer, decoder, BPE flags), with
    ids sorted by descending count over sample_texts (ties by old id)."""
    from tokenizers import Tokenizer

    counts = collections.Counter()
    for enc in tok.encode_batch(sample_texts):
        counts.update(enc.ids)
    spec = json.loads(tok.to_str())
    spec.update(QWEN3_LAYOUT)
    spec["model"].update(QWEN3_BPE_FLAGS)
    vocab = spec["model"]["vocab"]
    order = sorted(vocab.items(), key=lambda kv: (-counts.get(kv[1], 0), kv[1]))
    spec["model"]["vocab"] = {token: new_id for new_id, (token, _) in enumerate(order)}
    return Tokenizer.from_str(json.dumps(spec)), counts


def add_qwen3_tokens(tok):
    """Appends Qwen3's added tokens in order; returns {content: id}."""
    from tokenizers import AddedToken

    ids = {}
    for content, special in QWEN3_ADDED:
        t = AddedToken(content, single_word=False, lstrip=False, rstrip=False, normalized=False,
                       special=special)
        if special:
            tok.add_special_tokens([t])
        else:
            tok.add_tokens([t])
        ids[content] = tok.token_to_id(content)
    expected = list(range(min(ids.values()), min(ids.values()) + len(ids)))
    if sorted(ids.values()) != expected:
        raise RuntimeError(f"added tokens are not contiguous: {ids}")
    return ids


def tokenizer_config(chat_template):
    """tokenizer_config.json as Qwen3 ships it (the fields Twinspan and transformers read)."""
    return {
        "add_bos_token": False,
        "add_prefix_space": False,
        "bos_token": None,
        "chat_template": chat_template,
        "clean_up_tokenization_spaces": False,
        "eos_token": "<|im_end|>",
        "errors": "replace",
        "model_max_length": 4096,
        "pad_token": "<|endoftext|>",
        "split_special_tokens": False,
        "tokenizer_class": "Qwen2Tokenizer",
        "unk_token": None,
    }
