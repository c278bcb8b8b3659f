import json
import os
import tempfile
import unittest

from twinspan_bench import prompts


def write_lines(lines) -> str:
    fd, path = tempfile.mkstemp(suffix=".jsonl")
    with os.fdopen(fd, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


class BuiltinPromptsTest(unittest.TestCase):
    def test_code_and_chat_and_long_and_edit_exist(self):
        builtin = prompts.builtin_prompts()
        self.assertEqual(sorted(builtin), ["chat", "code", "edit", "json", "long"])
        self.assertIsNotNone(builtin["code"].text)
        self.assertIsNotNone(builtin["chat"].messages)
        self.assertIsNone(builtin["chat"].json_schema)

    def test_json_cell_carries_a_schema(self):
        schema = json.loads(prompts.builtin_prompts()["json"].json_schema)
        self.assertEqual(schema["required"], ["people"])

    def test_edit_prompt_is_valid_python_that_starts_repeating_itself(self):
        text = prompts.edit_code_prompt()
        compile(text, "edit", "exec")
        module, copy = text.split("combine_all is removed:\n")
        self.assertTrue(module.startswith(copy))

    def test_long_prompt_is_deterministic_valid_python_of_several_thousand_tokens(self):
        text = prompts.long_code_prompt()
        self.assertEqual(text, prompts.long_code_prompt())
        # ~4 characters a token for code: well over 3,000 tokens.
        self.assertGreater(len(text), 12000)
        compile(text + "    return 0\n", "long", "exec")


class PromptFileTest(unittest.TestCase):
    def test_reads_raw_and_chat_prompts(self):
        path = write_lines([
            json.dumps({"name": "a", "kind": "code", "prompt": "def f():"}),
            "",
            json.dumps({"name": "b", "kind": "chat",
                        "messages": [{"role": "user", "content": "hi"}]}),
        ])
        loaded = prompts.load_prompt_file(path)
        self.assertEqual([p.name for p in loaded], ["a", "b"])
        self.assertEqual(loaded[0].text, "def f():")
        self.assertEqual(loaded[1].messages, (("user", "hi"),))

    def test_reads_a_json_schema_as_object_or_text(self):
        schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
        path = write_lines([
            json.dumps({"name": "a", "kind": "json", "prompt": "x", "json_schema": schema}),
            json.dumps({"name": "b", "kind": "json", "messages": [{"role": "user", "content": "x"}],
                        "json_schema": json.dumps(schema)}),
        ])
        loaded = prompts.load_prompt_file(path)
        self.assertEqual([json.loads(p.json_schema) for p in loaded], [schema, schema])

    def assertRejected(self, line, fragment):
        path = write_lines([line])
        with self.assertRaises(ValueError) as ctx:
            prompts.load_prompt_file(path)
        self.assertIn(f"{path}:1", str(ctx.exception))
        self.assertIn(fragment, str(ctx.exception))

    def test_bad_lines_name_file_line_and_problem(self):
        self.assertRejected("{not json", "not valid JSON")
        self.assertRejected("[1]", "expected a JSON object")
        self.assertRejected(json.dumps({"name": "a", "kind": "code"}), "exactly one")
        self.assertRejected(json.dumps({"name": "a", "kind": "code", "prompt": "x",
                                        "messages": []}), "exactly one")
        self.assertRejected(json.dumps({"name": "", "kind": "code", "prompt": "x"}), "'name'")
        self.assertRejected(json.dumps({"name": "a/b", "kind": "code", "prompt": "x"}), "'name'")
        self.assertRejected(json.dumps({"name": "a", "prompt": "x"}), "'kind'")
        self.assertRejected(json.dumps({"name": "a", "kind": "c", "prompt": "x", "n": 1}),
                            "unknown keys")
        self.assertRejected(json.dumps({"name": "a", "kind": "c", "messages": [{"role": "u"}]}),
                            "messages[0]")
        self.assertRejected(json.dumps({"name": "a", "kind": "c", "prompt": "x", "json_schema": 3}),
                            "'json_schema'")

    def test_duplicate_names_and_empty_file_are_rejected(self):
        line = json.dumps({"name": "a", "kind": "code", "prompt": "x"})
        with self.assertRaisesRegex(ValueError, "appears twice"):
            prompts.load_prompt_file(write_lines([line, line]))
        with self.assertRaisesRegex(ValueError, "no prompts"):
            prompts.load_prompt_file(write_lines([""]))


if __name__ == "__main__":
    unittest.main()
