"""Python gRPC stubs generated from proto/twinspan/v1/*.proto at run time, cached by content hash.

Generated code is never committed: it goes to tools/bench/_stubs (git-ignored), or to --stubs-dir /
$TWINSPAN_BENCH_STUBS (the build's copy of the bench points that into the build folder).
"""

import glob
import hashlib
import importlib
import os
import shutil
import subprocess
import sys
import tempfile

BENCH_HOME = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def proto_root() -> str:
    """The folder that holds twinspan/v1/*.proto: $TWINSPAN_PROTO_DIR or the checkout's proto/."""
    return os.environ.get("TWINSPAN_PROTO_DIR") or os.path.join(BENCH_HOME, "..", "..", "proto")


def proto_files(root: str) -> list:
    files = sorted(glob.glob(os.path.join(root, "twinspan", "v1", "*.proto")))
    if not files:
        raise OSError(f"no twinspan/v1/*.proto under '{root}' (set TWINSPAN_PROTO_DIR)")
    return files


def content_hash(root: str, files: list) -> str:
    h = hashlib.sha256()
    for path in files:
        h.update(os.path.relpath(path, root).encode() + b"\0")
        with open(path, "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:16]


def compilers(root: str, out: str, files: list) -> list:
    """Command lines to try in order: grpc_tools' protoc, then Debian's protoc with the gRPC plugin
    (grpc_tools 1.14 bundles a protoc too old for proto3 `optional`)."""
    rel = [os.path.relpath(f, root) for f in files]
    commands = [[sys.executable, "-m", "grpc_tools.protoc", f"-I{root}", f"--python_out={out}",
                 f"--grpc_python_out={out}", *rel]]
    plugin = shutil.which("grpc_python_plugin")
    if shutil.which("protoc") and plugin:
        commands.append(["protoc", f"-I{root}", f"--python_out={out}", f"--grpc_out={out}",
                         f"--plugin=protoc-gen-grpc={plugin}", *rel])
    return commands


def generate(stubs_dir: str = None) -> str:
    """Generates the stubs unless this proto content was generated before; returns their folder."""
    root = os.path.abspath(proto_root())
    files = proto_files(root)
    base = os.path.abspath(stubs_dir or os.path.join(BENCH_HOME, "_stubs"))
    target = os.path.join(base, content_hash(root, files))
    if os.path.isdir(target):
        return target
    os.makedirs(base, exist_ok=True)
    errors = []
    for command in compilers(root, base, files):
        scratch = tempfile.mkdtemp(prefix="gen-", dir=base)
        command = [c.replace(f"_out={base}", f"_out={scratch}") for c in command]
        run = subprocess.run(command, cwd=root, capture_output=True, text=True)
        if run.returncode == 0:
            try:
                os.rename(scratch, target)  # atomic: a concurrent run may have won, which is fine
            except OSError:
                shutil.rmtree(scratch, ignore_errors=True)
            return target
        errors.append(f"{command[0]} {command[1]}...: {run.stderr.strip()}")
        shutil.rmtree(scratch, ignore_errors=True)
    raise OSError("could not generate Python stubs from " + root + ":\n" + "\n".join(errors))


def load(stubs_dir: str = None):
    """(serving_pb2, serving_pb2_grpc) from the generated stubs."""
    folder = generate(stubs_dir)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    pb2 = importlib.import_module("twinspan.v1.serving_pb2")
    pb2_grpc = importlib.import_module("twinspan.v1.serving_pb2_grpc")
    return pb2, pb2_grpc
