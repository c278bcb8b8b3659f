"""Writes a deterministic tokenizer test corpus (a JSON array of strings, >= 1 MB of UTF-8).

Run with Debian's Python: /usr/bin/python3 make_corpus.py OUT.json [--min-bytes N]
The same seed always gives the same bytes. Characters whose meaning differs between the Hugging Face
library (Oniguruma) and the JavaScript reference are left out on purpose: U+0085 and U+FEFF (JS and
Oniguruma disagree on whether they are whitespace), U+017F and U+212A (case folding of the (?i:'s)
contraction group), and code points assigned after Unicode 13 (engines differ by Unicode version).
"""

import argparse
import json
import os
import random

WORDS = (
    "the of and to in is was for that with as on by it at from his her an were are which this be or "
    "have had not but one all their they there been has when who will more no if out so said what up "
    "its about into than them can only other new some could time these two may then do first any my "
    "now such like our over man me even most made after also did many before must through back years "
    "where much your way well down should because each just those people how too little state good "
    "very make world still own see men work long get here between both life being under never day same "
    "another know while last might us great old year off come since against go came right used take "
    "three tokenizer merges vocabulary speculative decoding drafter target verify accepted rounds").split()
CONTRACTIONS = ["I'm", "you're", "we'll", "they've", "she's", "it'd", "don't", "WE'LL", "She'S",
                "I'M", "YOU'RE", "They'Ve", "isn't", "o'clock", "rock'n'roll", "'s", "'T", "''"]
SPECIALS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>", "<tool_call>",
            "</tool_call>", "<tool_response>", "</tool_response>", "<|fim_prefix|>", "<|fim_middle|>",
            "<|fim_suffix|>", "<|vision_start|>", "<|image_pad|>", "<|im_start", "<|im_", "im_end|>",
            "<|im_start|><|im_end|>", "<<|im_end|>>", "<|<|endoftext|>|>", "<think></think>"]
EMOJI = ["\U0001F600", "\U0001F44D\U0001F3FD", "\U0001F468\u200D\U0001F469\u200D\U0001F467\u200D\U0001F466",
         "\U0001F3F3\uFE0F\u200D\U0001F308", "\U0001F1FA\U0001F1F8", "\U0001F1EF\U0001F1F5", "1\uFE0F\u20E3",
         "\u2764\uFE0F", "\U0001F9D1\U0001F3FF\u200D\U0001F4BB", "\U0001F44B\U0001F3FB", "\u263A", "\U0001F525" * 3]
COMBINING = ["e\u0301", "a\u0308", "o\u0302\u0323", "\u1100\u1161\u11A8", "\u212B", "\u2126", "A\u030A",
             "\u0041\u0301\u0316", "n\u0303", "\u0915\u093F", "\u0627\u064E", "\u00C5", "fi\uFB01",
             "\u1E9B\u0323", "\u0344", "\u0958", "\u2000", "\u00BD\u2153", "\u3099\u304B\u3099"]
SCRIPTS = {
    "greek": (0x03B1, 0x03C9), "cyrillic": (0x0430, 0x044F), "hebrew": (0x05D0, 0x05EA),
    "arabic": (0x0627, 0x064A), "devanagari": (0x0905, 0x0939), "thai": (0x0E01, 0x0E2E),
    "cjk": (0x4E00, 0x9FA5), "hiragana": (0x3041, 0x3093), "katakana": (0x30A1, 0x30F6),
    "hangul": (0xAC00, 0xD7A3), "latin_ext": (0x00C0, 0x00FF), "armenian": (0x0561, 0x0586),
}
WHITESPACE = [" ", "  ", "   ", "\t", "\n", "\r\n", "\n\n", " \n", "\t\t", "\u00A0", "\u3000", "\u2003",
              "\u180E", "\u2028", "\r", "\x0b", "\x0c", " \t \n"]
CONTROLS = ["\x00", "\x01", "\x07", "\x1b[0m", "\x7f", "\x1f", "\u200B", "\u200C", "\u200D", "\u2060"]

CODE_TEMPLATES = [
    "def {name}({arg}, *args, **kwargs):\n    \"\"\"{doc}\"\"\"\n    if {arg} is None:\n        return {num}\n"
    "    for i in range({num}):\n        {arg} += i ** 2  # {doc}\n    return {arg}\n\n",
    "#include <vector>\n\nint {name}(const std::vector<int>& {arg}) {{\n  int total = {num};\n"
    "  for (size_t i = 0; i < {arg}.size(); ++i) total += {arg}[i] * 0x{hex};\n  return total;\n}}\n",
    "export async function {name}({arg}) {{\n\tconst res = await fetch(`/api/${{{arg}}}?n={num}`);\n"
    "\tif (!res.ok) throw new Error('{doc}');\n\treturn res.json();\n}}\n",
    "fn {name}<'a>({arg}: &'a str) -> Result<usize, String> {{\n    let n: usize = {num};\n"
    "    Ok({arg}.len() + n) // {doc}\n}}\n",
    "func {name}({arg} []byte) (int, error) {{\n\tif len({arg}) == 0 {{\n\t\treturn 0, errors.New(\"{doc}\")\n\t}}\n"
    "\treturn {num}, nil\n}}\n",
    "SELECT {arg}, COUNT(*) AS n FROM {name} WHERE id > {num} AND note LIKE '%{doc}%' GROUP BY {arg};\n",
    "<div class=\"{name}\" data-n=\"{num}\">\n  <p>{doc}</p>\n  <a href=\"https://example.com/{arg}?q={num}&amp;x=1\">link</a>\n</div>\n",
    "{{\"{name}\": {{\"{arg}\": [{num}, {num2}, -{num}.5e-3], \"doc\": \"{doc}\", \"ok\": true, \"none\": null}}}}\n",
    "#!/bin/sh\nset -eu\nfor f in ./{name}/*.txt; do\n  grep -c '{arg}' \"$f\" >> /tmp/{arg}.log || true\ndone\necho {num}\n",
    "    {name} = lambda {arg}: [{arg}[i:i+{num2}] for i in range(0, len({arg}), {num2})]\n",
]


class Generator:
    def __init__(self, seed):
        self.rng = random.Random(seed)

    def word(self):
        w = self.rng.choice(WORDS)
        r = self.rng.random()
        return w.capitalize() if r < 0.1 else (w.upper() if r < 0.13 else w)

    def number(self):
        kind = self.rng.randrange(6)
        if kind == 0:
            return str(self.rng.randrange(10 ** self.rng.randrange(1, 25)))
        if kind == 1:
            return f"{self.rng.uniform(-1e6, 1e6):.{self.rng.randrange(0, 8)}f}"
        if kind == 2:
            return f"{self.rng.randrange(10 ** 9):,}"
        if kind == 3:
            return f"{self.rng.randrange(1, 13)}/{self.rng.randrange(1, 29)}/20{self.rng.randrange(10, 30)}"
        if kind == 4:
            return "0x" + format(self.rng.getrandbits(64), "x")
        return f"{self.rng.random():.3e}"

    def script_run(self):
        lo, hi = SCRIPTS[self.rng.choice(sorted(SCRIPTS))]
        return "".join(chr(self.rng.randint(lo, hi)) for _ in range(self.rng.randint(1, 12)))

    def prose(self, sentences):
        out = []
        for _ in range(sentences):
            n = self.rng.randint(4, 22)
            parts = []
            for _ in range(n):
                r = self.rng.random()
                if r < 0.05:
                    parts.append(self.rng.choice(CONTRACTIONS))
                elif r < 0.09:
                    parts.append(self.number())
                else:
                    parts.append(self.word())
            s = " ".join(parts)
            out.append(s[0].upper() + s[1:] + self.rng.choice([".", "!", "?", ";", "...", ":", ".\""]))
        return " ".join(out)

    def code(self):
        t = self.rng.choice(CODE_TEMPLATES)
        name = "_".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(1, 3)))
        return t.format(name=name, arg=self.rng.choice(WORDS) + str(self.rng.randrange(10)),
                        doc=self.prose(1)[:60].replace("\"", "'"), num=self.rng.randrange(100000),
                        num2=self.rng.randrange(1, 64), hex=format(self.rng.getrandbits(32), "X"))

    def mixed_fragment(self):
        r = self.rng.random()
        if r < 0.25:
            return self.prose(self.rng.randint(1, 4))
        if r < 0.45:
            return self.code()
        if r < 0.55:
            return self.script_run()
        if r < 0.62:
            return self.rng.choice(EMOJI)
        if r < 0.69:
            return self.rng.choice(SPECIALS)
        if r < 0.76:
            return self.rng.choice(COMBINING)
        if r < 0.84:
            return self.rng.choice(WHITESPACE) * self.rng.choice([1, 1, 2, 3, 7])
        if r < 0.88:
            return self.rng.choice(CONTROLS)
        if r < 0.94:
            return self.number()
        return self.word() + self.rng.choice(["'s", "'S", "'re", "'ll", "'d", "'ve", "'m", "'t"])

    def document(self):
        kind = self.rng.randrange(10)
        if kind == 0:
            return self.prose(self.rng.randint(5, 40))
        if kind == 1:
            return "".join(self.code() for _ in range(self.rng.randint(1, 6)))
        if kind == 2:  # long whitespace runs and digit runs
            ws = self.rng.choice([" ", "\t", "\n", "\r\n", " \n", "\u3000"])
            return (self.word() + ws * self.rng.randint(50, 3000) + self.word() + "1" * self.rng.randint(1, 500)
                    + " " * self.rng.randint(1, 200))
        joiner = self.rng.choice(["", " ", "", "\n"])
        return joiner.join(self.mixed_fragment() for _ in range(self.rng.randint(5, 120)))


FIXED = [
    "", " ", "  ", "\n", "\r\n", "a", "Hello, world!", "Hello world", " Hello", "hello  world",
    "I'm here, you're there, we'LL see.", "1234567890", "3.14159 + 2e10 = x", "\t\tindented\n",
    "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n", "<think>\n\n</think>\n\n",
    "e\u0301 vs \u00e9", "\u212B\u2126", "\U0001F468\u200D\U0001F469\u200D\U0001F467", "\u4f60\u597d\uff0c\u4e16\u754c",
    "ends with spaces   ", "   starts with spaces", "line\n\n\nbreaks\r\n\r\n", "\x00\x01\x02",
]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out")
    parser.add_argument("--min-bytes", type=int, default=1_200_000)
    parser.add_argument("--seed", type=int, default=20261129)
    args = parser.parse_args()
    gen = Generator(args.seed)
    docs = list(FIXED)
    total = sum(len(d.encode("utf-8")) for d in docs)
    while total < args.min_bytes:
        d = gen.document()
        docs.append(d)
        total += len(d.encode("utf-8"))
    # ctest may run this before the npm fixture has made the folder.
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(docs, f, ensure_ascii=True)
    print(f"{len(docs)} documents, {total} bytes of UTF-8")


if __name__ == "__main__":
    main()
