"""Builds the CPU image and runs target, drafter and router from it on loopback.

The base image is made from Debian's packages (deploy/docker/build-base.sh: mmdebstrap, then podman
import); the CPU image is built from deploy/docker/Dockerfile with deploy/docker/build-images.sh,
its compile stage replaced by this build tree's binaries (--prebuilt): compiling the services again
inside the image would cost CI more than ten minutes. The test then checks the image (non-root, no
compiler, every library resolved, a gRPC HEALTHCHECK), starts the drafter, the target and the router
as containers on the host's loopback, sends the demo pair's reference request through the router
and compares the reply with transformers' greedy ids, and stops them with SIGTERM.

How containers run is detected and printed: podman as configured; podman with runc and this
machine's own rlimits (crun refuses cgroup v1 hybrid hosts, and a VM without CAP_SYS_RESOURCE
refuses podman's default RLIMIT_NOFILE); or, where no OCI runtime starts a container, the image's
root file system under unshare + chroot (built with buildah's chroot isolation).
TWINSPAN_IMAGE_MODE=podman|podman-runc|chroot forces one; TWINSPAN_IMAGE_REUSE_BASE=1 keeps an
existing base image (for reruns on a developer machine).

The CUDA image of the same build (when it has the CUDA backend: CI's has) is built too, in seconds
(its runtime stage is the CPU image's), and checked without a GPU: runtime only, and
`--device cuda:0` refused with a message naming the missing driver, not a crash.
TWINSPAN_IMAGE_TARGET=cuda runs everything on the CUDA image instead (the services on --device cpu);
TWINSPAN_IMAGE_FROM_SOURCE=1 compiles the image's binaries in its build stage instead of taking
this build tree's (tens of minutes: scripts/image-check.sh, beside CI, sets both);
TWINSPAN_IMAGE=NAME checks an image built already (of TWINSPAN_IMAGE_TARGET) instead of building.

Run by ctest with TWINSPAN_BUILD_DIR, TWINSPAN_SOURCE_DIR and TWINSPAN_PROTO_DIR set.
"""
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import twinspan_procs  # noqa: E402

SOURCE = os.environ.get("TWINSPAN_SOURCE_DIR", "")
BUILD = os.environ.get("TWINSPAN_BUILD_DIR", "")
PROTO = os.environ.get("TWINSPAN_PROTO_DIR", os.path.join(SOURCE, "proto"))
BASE = "localhost/twinspan/debian:bookworm"
TARGET = os.environ.get("TWINSPAN_IMAGE_TARGET", "cpu")
FROM_SOURCE = os.environ.get("TWINSPAN_IMAGE_FROM_SOURCE") == "1"
TAG = os.environ.get("TWINSPAN_IMAGE") or "localhost/twinspan:%s-test" % TARGET
BUILT_ALREADY = bool(os.environ.get("TWINSPAN_IMAGE"))
CUDA_TAG = "localhost/twinspan:cuda-test"
MODELS = os.path.join(SOURCE, "models", "demo")


def run(cmd, env=None, check=True, timeout=900):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError("%s failed (%d):\n%s%s" % (" ".join(cmd), r.returncode,
                                                        r.stdout[-4000:], r.stderr[-4000:]))
    return r


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Runtime:
    """How this machine runs the image: podman, podman with runc, or chroot."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.env = dict(os.environ)
        self.mode = None
        self.containers = []
        self.chroot_procs = []
        self._rootfs = {}

    def runc_conf(self):
        nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        nproc = resource.getrlimit(resource.RLIMIT_NPROC)[1]
        nofile = min(nofile, 65536) if nofile > 0 else 65536
        nproc = min(nproc, 32768) if nproc > 0 else 32768
        path = os.path.join(self.tmp, "containers.conf")
        with open(path, "w") as f:
            f.write('[containers]\ndefault_ulimits = ["nofile=%d:%d", "nproc=%d:%d"]\n'
                    '[engine]\nruntime = "runc"\n' % (nofile, nofile, nproc, nproc))
        return path

    def detect(self):
        forced = os.environ.get("TWINSPAN_IMAGE_MODE")
        probe = ["podman", "run", "--rm", "--network=host", BASE, "true"]
        if forced in (None, "podman") and run(probe, check=False).returncode == 0:
            self.mode = "podman"
            return
        if forced in (None, "podman-runc") and shutil.which("runc"):
            env = dict(self.env, CONTAINERS_CONF=self.runc_conf())
            if run(probe, env=env, check=False).returncode == 0:
                self.env, self.mode = env, "podman-runc"
                return
        if forced not in (None, "chroot"):
            raise AssertionError("TWINSPAN_IMAGE_MODE=%s cannot run here" % forced)
        self.mode = "chroot"
        self.env["PODMAN_BUILD_FLAGS"] = "--isolation chroot"

    def podman(self, *args, check=True, timeout=900):
        return run(["podman"] + list(args), env=self.env, check=check, timeout=timeout)

    def start(self, name, health_port, argv):
        """Starts argv from the image with the demo models at /models; returns a stop function."""
        if self.mode != "chroot":
            cname = "twinspan-image-test-%s-%d" % (name, os.getpid())
            self.podman("rm", "-f", cname, check=False)
            self.podman("run", "-d", "--name", cname, "--network=host", "--read-only",
                        "--health-interval=disable", "-e",
                        "TWINSPAN_HEALTH_ADDR=127.0.0.1:%d" % health_port,
                        "-v", "%s:/models:ro" % MODELS, "-v", "%s:/config:ro" % self.tmp,
                        TAG, *argv)
            self.containers.append(cname)
            return cname
        rootfs = self.rootfs()
        os.makedirs(os.path.join(self.tmp, "models"), exist_ok=True)
        script = ("mount --bind {tmp} {r}/mnt && mount --bind -o ro {models} {r}/mnt/models && "
                  "mount -t proc proc {r}/proc && exec chroot --userspec=10001:10001 {r} {argv}"
                  ).format(tmp=self.tmp, r=rootfs, models=MODELS, argv=" ".join(argv))
        log = open(os.path.join(self.tmp, name + ".log"), "w")
        p = subprocess.Popen(["unshare", "--mount", "sh", "-c", script],
                             stdout=log, stderr=subprocess.STDOUT)
        self.chroot_procs.append((p, log))
        return p

    def rootfs(self):
        return self.rootfs_of(TAG)

    def rootfs_of(self, tag):
        if tag not in self._rootfs:
            cid = self.podman("create", tag, "true").stdout.strip()
            self.containers.append(cid)
            self._rootfs[tag] = self.podman("mount", cid).stdout.strip()
        return self._rootfs[tag]

    def models_path(self):
        return "/models" if self.mode != "chroot" else "/mnt/models"

    def config_path(self):
        return "/config" if self.mode != "chroot" else "/mnt"

    def logs(self, handle):
        if isinstance(handle, str):
            r = self.podman("logs", handle, check=False)
            return r.stdout + r.stderr
        for p, log in self.chroot_procs:
            if p is handle:
                log.flush()
                with open(log.name) as f:
                    return f.read()
        return ""

    def stop(self, handle):
        """SIGTERM and wait; returns the exit code."""
        if isinstance(handle, str):
            self.podman("stop", "-t", "60", handle, check=False)
            out = self.podman("inspect", "--format", "{{.State.ExitCode}}", handle).stdout
            return int(out.strip())
        handle.terminate()
        return handle.wait(60)

    def cleanup(self):
        for p, log in self.chroot_procs:
            if p.poll() is None:
                p.kill()
                p.wait()
            log.close()
        for c in self.containers:
            self.podman("umount", c, check=False)
            self.podman("rm", "-f", c, check=False)


def wait_serving(channel, timeout=120):
    twinspan_procs.wait_ready(channel, timeout)


class ImageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        for tool in ("podman", "mmdebstrap"):
            if shutil.which(tool) is None:
                raise AssertionError("%s is missing: scripts/install-deps.sh installs it" % tool)
        cls.tmp = tempfile.mkdtemp(prefix="twinspan-image-")
        cls.times = {}
        cls.rt = Runtime(cls.tmp)
        t0 = time.monotonic()
        reuse = os.environ.get("TWINSPAN_IMAGE_REUSE_BASE") == "1"
        if not (reuse and run(["podman", "image", "exists", BASE], check=False).returncode == 0):
            run([os.path.join(SOURCE, "deploy", "docker", "build-base.sh"), BASE])
        cls.times["base image (mmdebstrap + import)"] = time.monotonic() - t0
        cls.rt.detect()
        print("image test: containers run with %s" % {
            "podman": "podman as configured",
            "podman-runc": "podman, runc and this machine's rlimits (crun or the default "
                           "rlimits were refused)",
            "chroot": "the image's root file system under unshare + chroot (no OCI runtime "
                      "could start a container)"}[cls.rt.mode], flush=True)
        t0 = time.monotonic()
        if BUILT_ALREADY:
            cls.rt.podman("image", "exists", TAG)
        else:
            cls.build_image(TARGET, TAG, FROM_SOURCE)
        how = ("built already" if BUILT_ALREADY else "compiled in its build stage" if FROM_SOURCE
               else "runtime stage + binaries")
        cls.times["%s image (%s)" % (TARGET, how)] = time.monotonic() - t0
        # The CUDA image of the same binaries: only its last layers differ from the CPU image's.
        cls.cuda_tag = TAG if TARGET == "cuda" else None
        cls.no_cuda_image = ("the CPU image given (TWINSPAN_IMAGE) comes with no CUDA image"
                             if BUILT_ALREADY else "the CPU image is compiled from source here"
                             if FROM_SOURCE else "this build has no CUDA backend, so no CUDA image")
        if cls.cuda_tag is None and not FROM_SOURCE and not BUILT_ALREADY and os.path.exists(
                os.path.join(BUILD, "kernels", "cuda", "libtwinspan_cuda.a")):
            t0 = time.monotonic()
            cls.build_image("cuda", CUDA_TAG, False)
            cls.cuda_tag = CUDA_TAG
            cls.times["cuda image (runtime stage + binaries)"] = time.monotonic() - t0

    @classmethod
    def build_image(cls, target, tag, from_source):
        cls.rt.podman("rmi", "-f", tag, check=False)
        cmd = [os.path.join(SOURCE, "deploy", "docker", "build-images.sh"), "--target", target,
               "--base", BASE, "--tag", tag]
        if not from_source:
            cmd += ["--prebuilt", BUILD]
        elif target == "cuda":
            cmd += ["--cuda-toolkit", os.environ.get("TWINSPAN_CUDA_TOOLKIT", "/usr/local/cuda")]
        run(cmd, env=cls.rt.env, timeout=None if from_source else 900)

    @classmethod
    def tearDownClass(cls):
        cls.rt.cleanup()
        sizes = {}
        for image in dict.fromkeys(t for t in (BASE, TAG, cls.cuda_tag) if t):
            r = cls.rt.podman("image", "inspect", "--format", "{{.Size}}", image, check=False)
            if r.returncode == 0:
                sizes[image] = "%.0f MB" % (int(r.stdout.strip()) / 1e6)
        print("image test: mode %s, sizes %s, times %s" % (
            cls.rt.mode, sizes, {k: "%.0f s" % v for k, v in cls.times.items()}), flush=True)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def inspect(self, fmt, tag=TAG):
        return self.rt.podman("image", "inspect", "--format", fmt, tag).stdout.strip()

    def in_image(self, tag, argv):
        """Runs argv in a throwaway container of tag (or its root file system under chroot)."""
        if self.rt.mode == "chroot":
            rootfs = self.rt.rootfs_of(tag)
            return run(["chroot", "--userspec=10001:10001", rootfs] + argv, check=False)
        return self.rt.podman("run", "--rm", "--health-interval=disable", "-v",
                              "%s:/models:ro" % MODELS, tag, *argv, check=False)

    def test_image_is_a_runtime_only(self):
        self.check_runtime_only(TAG)

    def test_cuda_image_is_a_runtime_only(self):
        if self.cuda_tag is None:
            self.skipTest(self.no_cuda_image)
        self.check_runtime_only(self.cuda_tag)
        env = self.inspect("{{json .Config.Env}}", self.cuda_tag)
        self.assertIn("NVIDIA_VISIBLE_DEVICES=all", env)
        self.assertIn("NVIDIA_DRIVER_CAPABILITIES=compute,utility", env)

    def test_cuda_image_without_a_driver_refuses_cuda(self):
        """No GPU, no libcuda.so.1: --device cuda:0 stops with the cause and the fix, no crash."""
        if self.cuda_tag is None:
            self.skipTest(self.no_cuda_image)
        if os.path.exists("/dev/nvidiactl"):
            self.skipTest("this machine has an NVIDIA driver")
        m = "/models" if self.rt.mode != "chroot" else "/mnt/models"
        models = {"twinspan-target": ["--model", m + "/target"],
                  "twinspan-drafter": ["--model", m + "/drafter", "--target-model", m + "/target"]}
        for binary, model in models.items():
            r = self.in_image(self.cuda_tag, ["/usr/local/bin/" + binary] + model + [
                "--listen", "127.0.0.1:0", "--device", "cuda:0"])
            out = r.stdout + r.stderr
            self.assertEqual(r.returncode, 1, "%s --device cuda:0 without a driver: exit %d "
                             "(1 expected: refused, not crashed):\n%s" % (binary, r.returncode, out))
            for words in ("cuda:0", "no usable NVIDIA driver", "libcuda.so.1",
                          "NVIDIA container toolkit"):
                self.assertIn(words, out, "%s's refusal does not say %r:\n%s" % (binary, words, out))

    def check_runtime_only(self, tag):
        self.assertEqual(self.inspect("{{.Config.User}}", tag), "10001:10001")
        health = json.loads(self.inspect("{{json .Config.Healthcheck}}", tag))
        self.assertIn("twinspan-probe health", " ".join(health["Test"]))
        check = ("command -v gcc cc c++ g++ clang nvcc ptxas ld as >/dev/null && exit 3; "
                 "dpkg-query -W -f '${Package}\\n' | grep -E '^(gcc(-[0-9]+)?|g\\+\\+(-[0-9]+)?|cpp(-[0-9]+)?|clang.*|binutils.*)$' "
                 "&& exit 4; for b in /usr/local/bin/*; do ldd $b | grep 'not found' && exit 5; "
                 "done; id -u")
        if self.rt.mode == "chroot":
            rootfs = self.rt.rootfs_of(tag)
            r = run(["chroot", rootfs, "sh", "-c", check], check=False)
        else:
            r = self.rt.podman("run", "--rm", "--health-interval=disable", tag, "sh", "-c",
                               check, check=False)
        self.assertEqual(r.returncode, 0, "image check failed (3: a compiler, 4: a compiler "
                         "package, 5: a library not found):\n" + r.stdout + r.stderr)
        if self.rt.mode != "chroot":
            self.assertEqual(r.stdout.strip().splitlines()[-1], "10001")

    def test_split_pair_behind_the_router(self):
        twinspan_procs.generate_stubs(PROTO, self.tmp)
        import grpc
        from twinspan.v1 import serving_pb2, serving_pb2_grpc

        with open(os.path.join(MODELS, "reference.json")) as f:
            reference = json.load(f)
        drafter_port, target_port, router_port = free_port(), free_port(), free_port()
        metric_ports = [free_port() for _ in range(3)]
        m = self.rt.models_path()
        config = {"listen": "127.0.0.1:%d" % router_port,
                  "metrics": "127.0.0.1:%d" % metric_ports[2], "health_interval_ms": 200,
                  "pools": [{"variant": "two-span", "weight": 1,
                             "workers": ["127.0.0.1:%d" % target_port]}]}
        with open(os.path.join(self.tmp, "router.json"), "w") as f:
            json.dump(config, f)
        os.chmod(self.tmp, 0o755)
        t0 = time.monotonic()
        drafter = self.rt.start("drafter", drafter_port, [
            "/usr/local/bin/twinspan-drafter", "--model", m + "/drafter", "--target-model",
            m + "/target", "--head-variant", "two-span", "--listen",
            "127.0.0.1:%d" % drafter_port, "--metrics", "127.0.0.1:%d" % metric_ports[0],
            "--threads", "1", "--device", "cpu"])
        target = self.rt.start("target", target_port, [
            "/usr/local/bin/twinspan-target", "--model", m + "/target", "--listen",
            "127.0.0.1:%d" % target_port, "--metrics", "127.0.0.1:%d" % metric_ports[1],
            "--name", "image-test", "--threads", "1", "--context", "1024", "--device", "cpu",
            "--drafter", "127.0.0.1:%d" % drafter_port, "--draft-timeout-ms", "5000"])
        router = self.rt.start("router", router_port, [
            "/usr/local/bin/twinspan-router", "--config", self.rt.config_path() + "/router.json"])
        handles = [("router", router), ("target", target), ("drafter", drafter)]
        try:
            channel = grpc.insecure_channel("127.0.0.1:%d" % router_port)
            try:
                wait_serving(channel)
            except grpc.FutureTimeoutError:
                self.fail("router did not serve:\n" + "\n".join(
                    "%s:\n%s" % (n, self.rt.logs(h)[-3000:]) for n, h in handles))
            self.times["services up"] = time.monotonic() - t0
            stub = serving_pb2_grpc.ServingStub(channel)
            replies = {}
            deadline = time.monotonic() + 60
            for draft in (True, False):
                request = serving_pb2.GenerateRequest(
                    request_id="image-%s" % draft,
                    prompt_ids=serving_pb2.TokenIds(ids=reference["prompt_ids"]),
                    sampling=serving_pb2.SamplingParams(
                        max_tokens=len(reference["greedy_ids"]), temperature=0.0))
                request.sampling.draft.value = draft
                while True:  # the router's first health round may not have passed yet
                    try:
                        ids, final = [], None
                        for msg in stub.Generate(request, timeout=120):
                            if msg.HasField("chunk"):
                                ids.extend(msg.chunk.ids)
                            else:
                                final = msg.final
                        break
                    except grpc.RpcError as e:
                        if e.code() != grpc.StatusCode.UNAVAILABLE or time.monotonic() > deadline:
                            raise
                        time.sleep(0.5)
                replies[draft] = (ids, final)
            ids, final = replies[True]
            self.assertEqual(ids, reference["greedy_ids"], "the image's reply is not the "
                             "reference greedy continuation")
            self.assertEqual(final.token_sha256, replies[False][1].token_sha256)
            self.assertEqual(final.head_variant, "two-span")
            self.assertGreaterEqual(final.accepted, reference["min_accepted"],
                                    "the drafter container's proposals were not accepted")
            if self.rt.mode != "chroot":
                # The image's own client: its HEALTHCHECK, and one request as helm test sends it.
                for name, handle in handles:
                    r = self.rt.podman("healthcheck", "run", handle, check=False)
                    self.assertEqual(r.returncode, 0, "%s HEALTHCHECK: %s%s" %
                                     (name, r.stdout, r.stderr))
                r = self.rt.podman("exec", router, "/usr/local/bin/twinspan-probe", "generate",
                                   "--addr", "127.0.0.1:%d" % router_port, "--prompt",
                                   "def is_prime(n):", "--max-tokens", "4")
                self.assertEqual(json.loads(r.stdout)["completion_tokens"], 4)
            print("image test: reply through the router matches the reference (%d ids, %d "
                  "drafted, %d accepted)" % (len(ids), final.drafted, final.accepted), flush=True)
            channel.close()
        finally:
            codes = {name: self.rt.stop(h) for name, h in handles}
        self.assertEqual(codes, {"router": 0, "target": 0, "drafter": 0},
                         "exit codes after SIGTERM")


if __name__ == "__main__":
    unittest.main(verbosity=2)
