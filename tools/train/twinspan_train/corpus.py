"""The demo pair's text: the source code and documentation of the Python installed on the
machine that trains it, deduplicated, split into training and held-out files by content hash,
plus single-turn chat samples made from the same files (a docstring asks for its function, a
documentation heading for its section)."""
import ast
import dataclasses
import hashlib
import multiprocessing
import os
import random
import re
import site
import sysconfig
import textwrap

CODE_SUFFIXES = (".py",)
PROSE_SUFFIXES = (".md", ".rst", ".txt")
PROSE_NAMES = ("METADATA", "README", "copyright")


@dataclasses.dataclass
class Document:
    path: str
    kind: str  # "code" or "prose"
    text: str
    digest: str


def default_roots():
    """The standard library, every site-packages folder and /usr/share/doc, as found here."""
    roots = [sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["purelib"]]
    roots += site.getsitepackages() if hasattr(site, "getsitepackages") else []
    roots.append("/usr/share/doc")
    seen, out = set(), []
    for r in roots:
        r = os.path.realpath(r)
        if os.path.isdir(r) and r not in seen:
            seen.add(r)
            out.append(r)
    return out


def kind_of(name):
    if name.endswith(CODE_SUFFIXES):
        return "code"
    if name.endswith(PROSE_SUFFIXES) or name in PROSE_NAMES or name.startswith("README"):
        return "prose"
    return None


# Longest line and mean line length a file may have: code is wrapped, prose paragraphs often not.
LINE_LIMITS = {"code": (400, 100), "prose": (3000, 400)}


def plausible_text(text, kind):
    """Rejects generated or binary-ish files: very long lines, few letters."""
    lines = text.splitlines()
    longest, mean = LINE_LIMITS[kind]
    if not lines or max(len(line) for line in lines) > longest:
        return False
    if sum(len(line) for line in lines) / len(lines) > mean:
        return False
    letters = sum(ch.isascii() and ch.isalpha() for ch in text)
    return letters >= 0.3 * len(text)


def scan(roots, min_bytes=200, max_bytes=200_000):
    """Every usable file under roots, deduplicated by content, in a fixed order (by digest)."""
    docs = {}
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for name in sorted(filenames):
                kind = kind_of(name)
                if kind is None:
                    continue
                path = os.path.join(dirpath, name)
                try:
                    size = os.path.getsize(path)
                    if not min_bytes <= size <= max_bytes:
                        continue
                    with open(path, "rb") as f:
                        text = f.read().decode("utf-8")
                except (OSError, UnicodeDecodeError):
                    continue
                text = text.replace("\r\n", "\n")
                if not plausible_text(text, kind):
                    continue
                digest = hashlib.sha256(text.encode()).hexdigest()
                docs.setdefault(digest, Document(path, kind, text, digest))
    return [docs[d] for d in sorted(docs)]


def is_heldout(doc, percent):
    """Held out by content hash, so no file of the held-out split reaches any training step."""
    return int(doc.digest[:8], 16) % 100 < percent


def split(docs, heldout_percent):
    train = [d for d in docs if not is_heldout(d, heldout_percent)]
    held = [d for d in docs if is_heldout(d, heldout_percent)]
    return train, held


def cap(docs, max_bytes):
    """The first documents (digest order is a fixed shuffle) up to max_bytes of text."""
    out, total = [], 0
    for d in docs:
        if total + len(d.text) > max_bytes:
            continue
        out.append(d)
        total += len(d.text)
    return out


# --- chat samples ---------------------------------------------------------------------------

CODE_ASKS = (
    "Write a Python function `{sig}`. {what}",
    "Implement `{sig}` in Python. {what}",
    "Can you write `{sig}` for me? {what}",
)
PROSE_ASKS = ("Explain {topic}.", "What is {topic}?", "Tell me about {topic}.")


def first_sentence(docstring):
    line = docstring.strip().split("\n\n")[0].replace("\n", " ").strip()
    line = re.split(r"(?<=[.!?])\s", line)[0]
    return line if 15 <= len(line) <= 200 else None


def _functions(doc):
    """The file's lines and its function definitions, in ast.walk order (none when it does not parse)."""
    try:
        tree = ast.parse(doc.text)
    except (SyntaxError, ValueError, RecursionError):
        return [], []
    nodes = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return doc.text.split("\n"), nodes


def function_samples(doc, rng, max_lines=60):
    """(user, assistant) pairs from the documented functions of a Python file."""
    lines, nodes = _functions(doc)
    out = []
    for node in nodes:
        what = first_sentence(ast.get_docstring(node) or "")
        if what is None or node.name.startswith("_"):
            continue
        start = (node.decorator_list[0].lineno if node.decorator_list else node.lineno) - 1
        end = node.end_lineno
        if end - start > max_lines or end - start < 3:
            continue
        source = textwrap.dedent("\n".join(lines[start:end]))
        args = ", ".join(a.arg for a in node.args.args)
        sig = f"{node.name}({args})"
        ask = CODE_ASKS[rng.randrange(len(CODE_ASKS))]
        user = ask.format(sig=sig, what=what[:1].upper() + what[1:])
        out.append((user, f"```python\n{source}\n```"))
    return out


def completion_prompts(doc, context_lines=30, min_rest=4):
    """Code-completion prompts from a Python file: up to context_lines of the file before a
    documented function, its signature and docstring; the body is left to the model."""
    lines, nodes = _functions(doc)
    out = []
    for node in nodes:
        if not ast.get_docstring(node):
            continue
        doc_end = node.body[0].end_lineno
        if node.end_lineno - doc_end < min_rest or len(node.body) < 2:
            continue
        start = max(0, node.lineno - 1 - context_lines)
        out.append("\n".join(lines[start:doc_end]) + "\n")
    return out


HEADING = re.compile(r"^(#{1,4}) +(.+)$|^(.+)\n([=\-~^]{3,})$", re.M)


def section_samples(doc, rng, min_chars=200, max_chars=1500):
    """(user, assistant) pairs from the headed sections of a Markdown or reST document."""
    matches = list(HEADING.finditer(doc.text))
    out = []
    for i, m in enumerate(matches):
        title = (m.group(2) or m.group(3) or "").strip().strip("#*`: ")
        if not 3 <= len(title) <= 80 or not any(ch.isalpha() for ch in title):
            continue
        body_end = matches[i + 1].start() if i + 1 < len(matches) else len(doc.text)
        body = doc.text[m.end():body_end].strip()
        if len(body) < min_chars:
            continue
        if len(body) > max_chars:
            cut = body.rfind("\n\n", 0, max_chars)
            body = body[: cut if cut > min_chars else max_chars].strip()
        ask = PROSE_ASKS[rng.randrange(len(PROSE_ASKS))]
        out.append((ask.format(topic=title), body))
    return out


def _doc_samples(doc):
    rng = random.Random(doc.digest)  # per document, so a process pool gives the same pairs
    return function_samples(doc, rng) if doc.kind == "code" else section_samples(doc, rng)


def chat_samples(docs, seed, limit, processes=None):
    """Up to `limit` chat pairs from `docs`, shuffled with `seed` (parsing runs in a pool)."""
    with multiprocessing.Pool(processes or os.cpu_count()) as pool:
        per_doc = pool.map(_doc_samples, docs, chunksize=16)
    pairs = [p for doc_pairs in per_doc for p in doc_pairs]
    random.Random(seed).shuffle(pairs)
    return pairs[:limit]


def render_chat(user, assistant=None):
    """The Qwen3 chat template's text for one user turn (and the non-thinking reply)."""
    text = f"<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n"
    if assistant is None:
        return text
    return text + f"<think>\n\n</think>\n\n{assistant}<|im_end|>\n"
