"""Built-in prompts (code, chat, long, edit) and the JSON-lines prompt file reader."""

import json

from .model import Prompt

CODE_PROMPT = '''import heapq
from dataclasses import dataclass, field


@dataclass(order=True)
class Task:
    priority: int
    name: str = field(compare=False)


def schedule(tasks: list[Task], workers: int) -> list[list[str]]:
    """Assign tasks to workers, highest priority first, balancing total priority per worker."""
'''

CHAT_MESSAGES = (
    ("system", "You are a helpful assistant. Answer clearly and completely."),
    ("user", "Explain how a hash map handles collisions, compare separate chaining with open "
     "addressing, and say when you would pick each. Give a short example for both."),
)

JSON_MESSAGES = (
    ("system", "You are a helpful assistant. Reply with JSON only."),
    ("user", "Describe three programmers: a name, an age and the languages each writes."),
)

# The structured-output cell's schema: bounded strings, integers, enums and arrays.
JSON_SCHEMA = json.dumps({
    "type": "object",
    "properties": {"people": {"type": "array", "minItems": 1, "maxItems": 3, "items": {
        "type": "object",
        "properties": {"name": {"type": "string", "maxLength": 24},
                       "age": {"type": "integer"},
                       "langs": {"type": "array", "maxItems": 4,
                                 "items": {"enum": ["python", "c++", "rust", "go", "java"]}}},
        "required": ["name", "age", "langs"]}}},
    "required": ["people"]}, separators=(",", ":"))

_WORDS = ("count", "total", "index", "value", "limit", "offset", "buffer", "record", "weight",
          "score", "window", "cursor", "bucket", "margin", "factor", "stride", "length", "batch")
_OPS = ("+", "-", "*", "//", "%")


class _Lcg:
    """A fixed linear congruential generator so the long prompt is the same everywhere."""

    def __init__(self, seed: int):
        self.state = seed

    def next(self, n: int) -> int:
        self.state = (self.state * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        return (self.state >> 33) % n


def _three_words(rng: _Lcg) -> tuple:
    """Three distinct identifiers, so every generated function is valid Python."""
    picked = []
    while len(picked) < 3:
        word = _WORDS[rng.next(len(_WORDS))]
        if word not in picked:
            picked.append(word)
    return tuple(picked)


def long_code_prompt(functions: int = 80) -> str:
    """A synthetic Python module of several thousand tokens (~16 k characters), ending mid-definition."""
    rng = _Lcg(20261129)
    lines = ['"""Synthetic module used as a long prompt by twinspan-bench."""', ""]
    for f in range(functions):
        a, b, c = _three_words(rng)
        lines.append(f"def {a}_{b}_{f}({a}: int, {b}: int) -> int:")
        lines.append(f'    """Combine {a} and {b} into a {c}."""')
        lines.append(f"    {c} = {a} {_OPS[rng.next(len(_OPS))]} {rng.next(97) + 1}")
        lines.append(f"    if {c} > {b}:")
        lines.append(f"        {c} = {c} {_OPS[rng.next(len(_OPS))]} {b}")
        lines.append(f"    return {c}")
        lines.append("")
    lines.append("def combine_all(values: list[int]) -> int:")
    lines.append('    """Fold every function above over the values, in order."""')
    return "\n".join(lines) + "\n"


def edit_code_prompt(functions: int = 24) -> str:
    """Editing a long code file: a synthetic module, then the start of its edited copy, so the
    completion repeats long runs of the prompt (what context-copy drafts propose)."""
    module = long_code_prompt(functions)
    head = "\n".join(module.splitlines()[:4])
    return (module + "    return sum(values)\n\n\n"
            "# The module above again, unchanged except that combine_all is removed:\n" + head + "\n")


def builtin_prompts(long_functions: int = 80) -> dict:
    """The built-in prompts by name: 'code' and 'chat' (the default cells), 'long'
    (`long_functions` synthetic functions, ~200 characters each), 'json' (chat under a JSON
    Schema: structured output with drafting on) and 'edit' (a module of 24 such functions to be
    repeated with an edit)."""
    return {
        "code": Prompt("code", "code", text=CODE_PROMPT),
        "chat": Prompt("chat", "chat", messages=CHAT_MESSAGES),
        "long": Prompt("long", "code", text=long_code_prompt(long_functions)),
        "json": Prompt("json", "json", messages=JSON_MESSAGES, json_schema=JSON_SCHEMA),
        "edit": Prompt("edit", "code", text=edit_code_prompt()),
    }


def parse_prompt_line(obj, where: str) -> Prompt:
    """One prompt from a decoded JSON object; raises ValueError naming `where` on bad input."""
    if not isinstance(obj, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    unknown = set(obj) - {"name", "kind", "prompt", "messages", "json_schema"}
    if unknown:
        raise ValueError(f"{where}: unknown keys {sorted(unknown)}")
    name, kind = obj.get("name"), obj.get("kind")
    if not isinstance(name, str) or not name or "/" in name:
        raise ValueError(f"{where}: 'name' must be a non-empty string without '/'")
    if not isinstance(kind, str) or not kind:
        raise ValueError(f"{where}: 'kind' must be a non-empty string")
    schema = obj.get("json_schema")
    if schema is not None:
        if isinstance(schema, dict):
            schema = json.dumps(schema, separators=(",", ":"))
        elif not isinstance(schema, str) or not schema:
            raise ValueError(f"{where}: 'json_schema' must be a JSON Schema object or its text")
    has_prompt, has_messages = "prompt" in obj, "messages" in obj
    if has_prompt == has_messages:
        raise ValueError(f"{where}: give exactly one of 'prompt' (raw text) or 'messages' (chat)")
    if has_prompt:
        if not isinstance(obj["prompt"], str) or not obj["prompt"]:
            raise ValueError(f"{where}: 'prompt' must be a non-empty string")
        return Prompt(name, kind, text=obj["prompt"], json_schema=schema)
    messages = obj["messages"]
    if not isinstance(messages, list) or not messages:
        raise ValueError(f"{where}: 'messages' must be a non-empty list")
    parsed = []
    for i, m in enumerate(messages):
        if (not isinstance(m, dict) or set(m) != {"role", "content"}
                or not isinstance(m["role"], str) or not isinstance(m["content"], str)):
            raise ValueError(f"{where}: messages[{i}] must be {{\"role\": str, \"content\": str}}")
        parsed.append((m["role"], m["content"]))
    return Prompt(name, kind, messages=tuple(parsed), json_schema=schema)


def load_prompt_file(path: str) -> list:
    """Prompts from a JSON-lines file (blank lines skipped); raises ValueError naming file:line."""
    prompts, seen = [], set()
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{where}: not valid JSON ({e.msg})") from None
            prompt = parse_prompt_line(obj, where)
            if prompt.name in seen:
                raise ValueError(f"{where}: prompt name '{prompt.name}' appears twice")
            seen.add(prompt.name)
            prompts.append(prompt)
    if not prompts:
        raise ValueError(f"{path}: no prompts in file")
    return prompts
