"""Bad model files are refused at load, each with a message that names the file and the fix: a
truncated checkpoint, a tensor of the wrong dtype, a drafter made for another target, a tokenizer
that does not fit the model's vocabulary, a chat template that does not render. Also: no request
field reaches the file system, and log lines carry no prompt text unless --log-prompts asks.

Run by ctest with TWINSPAN_{TARGET,DRAFTER,MAKE_DEMO}_BIN and TWINSPAN_PROTO_DIR set.
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import twinspan_procs  # noqa: E402

BINS = {name: os.environ.get("TWINSPAN_%s_BIN" % name.upper(), "")
        for name in ("target", "drafter", "router", "make_demo")}
PROTO_DIR = os.environ.get("TWINSPAN_PROTO_DIR", "")


def rewrite_header(path, edit):
    """Applies `edit` to a safetensors file's header JSON, keeping its length (space padding), so
    every data offset stays valid."""
    with open(path, "r+b") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        edit(header)
        text = json.dumps(header, separators=(",", ":")).encode()
        if len(text) > n:
            raise ValueError("the edited header is longer than the original")
        f.seek(8)
        f.write(text + b" " * (n - len(text)))


class ModelFilesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        twinspan_procs.check_binaries(BINS)
        cls.work = twinspan_procs.tempdir("twinspan-model-files-")
        cls.models = twinspan_procs.make_demo(BINS["make_demo"], os.path.join(cls.work, "models"))

    @classmethod
    def tearDownClass(cls):
        if os.environ.get("TWINSPAN_KEEP_LOGS") is None:
            shutil.rmtree(cls.work, ignore_errors=True)

    def copy(self, which, name):
        out = os.path.join(self.work, name)
        shutil.rmtree(out, ignore_errors=True)
        shutil.copytree(os.path.join(self.models, which), out)
        return out

    def refused(self, binary, args, *wants):
        """Runs a service that must refuse to start; returns its stderr after checking it."""
        p = subprocess.run([BINS[binary]] + args + ["--listen", "127.0.0.1:0", "--metrics",
                                                    "127.0.0.1:0", "--threads", "1"],
                           capture_output=True, text=True, timeout=120)
        self.assertNotEqual(p.returncode, 0, (args, p.stderr))
        for want in wants:
            self.assertIn(want, p.stderr, args)
        return p.stderr

    def test_truncated_checkpoint(self):
        target = self.copy("target", "truncated")
        path = os.path.join(target, "model.safetensors")
        size = os.path.getsize(path)
        with open(path, "r+b") as f:
            f.truncate(size - 4096)
        self.refused("target", ["--model", target], path, "truncated", "fetch it again")
        with open(path, "r+b") as f:
            f.truncate(6)
        self.refused("target", ["--model", target], path, "fetch it again")

    def test_tensor_of_the_wrong_dtype(self):
        target = self.copy("target", "wrong-dtype")
        path = os.path.join(target, "model.safetensors")
        names = []

        def to_int16(header):
            for name, t in header.items():
                if name.endswith("norm.weight") and t["dtype"] in ("BF16", "F16"):
                    t["dtype"] = "I16"  # same width: the offsets still hold
                    names.append(name)
                    return

        rewrite_header(path, to_int16)
        self.assertTrue(names)
        self.refused("target", ["--model", target], path, names[0], "is I16",
                     "export the checkpoint again")

    def test_drafter_of_another_target(self):
        drafter = self.copy("drafter", "other-drafter")
        config_path = os.path.join(drafter, "config.json")
        with open(config_path) as f:
            config = json.load(f)
        holder = config.get("dflash_config", config)
        holder["target_layer_ids"] = [i + 90 for i in holder["target_layer_ids"]]
        with open(config_path, "w") as f:
            json.dump(config, f)
        target = os.path.join(self.models, "target")
        wants = (drafter + "/config.json", "drafter of another target",
                 "pair it with the target it was trained for")
        self.refused("drafter", ["--model", drafter, "--target-model", target], *wants)
        self.refused("target", ["--model", target, "--drafter-model", drafter], *wants)

    def test_tokenizer_that_does_not_fit_the_vocabulary(self):
        target = self.copy("target", "wide-tokenizer")
        with open(os.path.join(target, "config.json")) as f:
            vocab = json.load(f)["vocab_size"]
        path = os.path.join(target, "tokenizer.json")
        with open(path) as f:
            tokenizer = json.load(f)
        tokenizer["added_tokens"].append({
            "id": vocab + 7, "content": "<|from_another_model|>", "single_word": False,
            "lstrip": False, "rstrip": False, "normalized": False, "special": True})
        with open(path, "w") as f:
            json.dump(tokenizer, f)
        self.refused("target", ["--model", target], path, "vocab_size %d" % vocab,
                     "the tokenizer belongs to another model")

    def test_chat_template_that_does_not_render(self):
        target = self.copy("target", "bad-template")
        path = os.path.join(target, "tokenizer_config.json")
        with open(path) as f:
            config = json.load(f)
        for template, want in (
                ("{{ raise_exception('this template needs a system message') }}",
                 "needs a system message"),
                ("{% for m in messages %}{{ m.content + 1 }}{% endfor %}", "cannot render"),
                ("{% if messages %}unclosed", "does not load")):
            config["chat_template"] = template
            with open(path, "w") as f:
                json.dump(config, f)
            self.refused("target", ["--model", target], path, want, "fix the template")


class RequestHygieneTest(unittest.TestCase):
    """What a request can leave behind: nothing of its text in the logs (unless --log-prompts),
    no forged log line through its id, no file opened for any of its fields."""

    @classmethod
    def setUpClass(cls):
        cls.work = twinspan_procs.tempdir("twinspan-hygiene-")
        cls.models = twinspan_procs.make_demo(BINS["make_demo"], os.path.join(cls.work, "models"))
        twinspan_procs.generate_stubs(PROTO_DIR, twinspan_procs.tempdir("twinspan-stubs-"))
        global pb, pb_grpc, grpc
        import grpc
        from twinspan.v1 import serving_pb2 as pb, serving_pb2_grpc as pb_grpc
        cls.cluster = twinspan_procs.Cluster(BINS, cls.work)

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop_all()
        if os.environ.get("TWINSPAN_KEEP_LOGS") is None:
            shutil.rmtree(cls.work, ignore_errors=True)

    def requests(self, marker):
        """A prompt (with a stop string) and a chat, all carrying `marker`."""
        plain = pb.GenerateRequest(prompt="%s in a prompt" % marker)
        plain.sampling.max_tokens = 4
        plain.sampling.stop.append(marker + "-stop")
        chat = pb.GenerateRequest()
        chat.chat.messages.add(role="user", content="%s in a chat" % marker)
        chat.sampling.max_tokens = 4
        return plain, chat

    def serve(self, name, extra):
        drafter = self.cluster.drafter(name + "-drafter", self.models)
        target = self.cluster.target(name, self.models, drafter=drafter.address,
                                     extra=("--log-level", "trace") + extra)
        config = os.path.join(self.work, name + ".json")
        with open(config, "w") as f:
            json.dump({"pools": [{"variant": "two-span", "weight": 1,
                                  "workers": [target.address]}], "health_interval_ms": 100}, f)
        router = self.cluster.start(name + "-router", "router", [
            "--config", config, "--listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0",
            "--log-level", "trace"])
        stub = pb_grpc.ServingStub(grpc.insecure_channel(router.address))
        deadline = time.time() + 30
        while stub.GetLoad(pb.GetLoadRequest(), timeout=5).max_parallel != 1:
            self.assertLess(time.time(), deadline, router.tail())
            time.sleep(0.05)
        return (drafter, target, router), stub

    def run_requests(self, stub, marker):
        for r in self.requests(marker):
            r.session_key = "session\nforged log line"
            for response in stub.Generate(r, timeout=60):
                pass

    def logs(self, procs):
        out = {}
        for p in procs:
            with open(p.log_path) as f:
                out[p.name] = f.read()
        return out

    def test_no_prompt_text_in_any_log_unless_asked(self):
        procs, stub = self.serve("quiet", ())
        self.run_requests(stub, "MARKER-7f3a")
        for name, text in self.logs(procs).items():
            self.assertNotIn("MARKER-7f3a", text, name)
            self.assertNotIn("\nforged log line", text, name)  # a session key is logged escaped
        procs, stub = self.serve("verbose", ("--log-prompts",))
        self.run_requests(stub, "MARKER-91c2")
        logs = self.logs(procs)
        self.assertIn("MARKER-91c2 in a prompt", logs["verbose"])
        self.assertIn("MARKER-91c2 in a chat", logs["verbose"])

    def test_request_ids_cannot_forge_log_lines(self):
        procs, stub = self.serve("ids", ())
        for bad in ("two words", "line\nbreak", "x" * 300, "tab\tbed"):
            r = pb.GenerateRequest(prompt="hi", request_id=bad)
            r.sampling.max_tokens = 2
            with self.assertRaises(grpc.RpcError) as e:
                for _ in stub.Generate(r, timeout=30):
                    pass
            self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT, bad)
            self.assertIn("printable ASCII", e.exception.details())
        for name, text in self.logs(procs).items():
            self.assertNotIn("line\nbreak", text, name)
            self.assertNotIn("two words", text, name)
        # Path-like fields are names, never paths: an unknown variant is refused by name.
        r = pb.GenerateRequest(prompt="hi", head_variant="../../../etc/passwd",
                               request_id="path-like")
        r.sampling.max_tokens = 2
        with self.assertRaises(grpc.RpcError) as e:
            for _ in stub.Generate(r, timeout=30):
                pass
        self.assertEqual(e.exception.code(), grpc.StatusCode.NOT_FOUND)


if __name__ == "__main__":
    unittest.main(verbosity=2)
