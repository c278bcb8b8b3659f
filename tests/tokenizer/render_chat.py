"""Renders chat cases with Jinja2 the way transformers' apply_chat_template(tokenize=False) does.

Run with Debian's Python: /usr/bin/python3 render_chat.py TEMPLATE CASES.json OUT.json
TEMPLATE is a tokenizer_config.json (its "chat_template" and special tokens) or a .jinja file.
Each case is {"messages": [...], "tools": [...], "add_generation_prompt": bool,
"enable_thinking": bool}; the output is a list of {"ok": true, "text": ...} or {"ok": false,
"error": ...}, one per case.
"""

import json
import os
import sys
from datetime import datetime

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

SPECIAL_KEYS = ["bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"]


def token_string(value):
    if isinstance(value, dict):
        return value.get("content")
    return value


def load(path):
    if path.endswith(".json"):
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
        template = config["chat_template"]
        if isinstance(template, list):
            template = next(t["template"] for t in template if t["name"] == "default")
        special = {}
        for key in SPECIAL_KEYS:
            value = token_string(config.get(key))
            if value is not None:
                special[key] = value
        if config.get("additional_special_tokens"):
            special["additional_special_tokens"] = [token_string(t) for t in config["additional_special_tokens"]]
        return template, special
    with open(path, encoding="utf-8") as f:
        return f.read(), {}


def make_environment():
    # Mirrors transformers.utils.chat_template_utils._compile_jinja_template.
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return datetime.now().strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def main():
    template_path, cases_path, out_path = sys.argv[1:4]
    source, special = load(template_path)
    template = make_environment().from_string(source)
    with open(cases_path, encoding="utf-8") as f:
        cases = json.load(f)
    results = []
    for case in cases:
        kwargs = dict(special)
        kwargs.update(messages=case["messages"], tools=case.get("tools"), documents=None,
                      add_generation_prompt=case.get("add_generation_prompt", True))
        if "enable_thinking" in case:
            kwargs["enable_thinking"] = case["enable_thinking"]
        try:
            results.append({"ok": True, "text": template.render(**kwargs)})
        except Exception as error:  # the C++ side must fail on the same cases
            results.append({"ok": False, "error": f"{type(error).__name__}: {error}"})
    # ctest may run this before the npm fixture has made the folder.
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(results, f, ensure_ascii=False, indent=1)
    print(f"{len(results)} cases rendered")


if __name__ == "__main__":
    main()
