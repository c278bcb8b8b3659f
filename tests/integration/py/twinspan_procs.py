"""Starts and stops Twinspan processes on 127.0.0.1 for the integration tests and the demo.

Each process prints "<role> listening grpc=<port> metrics=<port>" once it serves; the ports are
picked by the process itself (port 0), so parallel test runs never collide.
"""
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

import grpc_tools.protoc


def check_binaries(bins):
    """Raises naming the first role (a key of `bins`) whose binary is missing."""
    for name, path in bins.items():
        if not os.path.exists(path):
            raise RuntimeError("binary for %s not found: %r" % (name, path))


def generate_stubs(proto_dir, out_dir):
    """Generates the twinspan.v1 Python stubs with Debian's grpc_tools and makes them importable."""
    protos = [os.path.join(proto_dir, "twinspan", "v1", name) for name in ("serving.proto", "drafter.proto")]
    args = ["grpc_tools.protoc", "-I" + proto_dir, "-I/usr/include",
            "--python_out=" + out_dir, "--grpc_python_out=" + out_dir] + protos
    if grpc_tools.protoc.main(args) != 0:
        raise RuntimeError("grpc_tools.protoc failed on " + " ".join(protos))
    sys.path.insert(0, out_dir)


class Proc:
    """One child process; its output goes to a log file, its ports are read from its first line."""

    LISTEN = re.compile(r"listening grpc=(\d+) metrics=(\d+)")

    def __init__(self, name, argv, log_dir, env=None, timeout=120):
        self.name = name
        self.log_path = os.path.join(log_dir, name + ".log")
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.log, text=True,
                                     env=env)
        self.port = None
        self.metrics_port = None
        ready = threading.Event()

        def pump():
            for line in self.proc.stdout:
                self.log.write(line)
                self.log.flush()
                m = self.LISTEN.search(line)
                if m and not ready.is_set():
                    self.port, self.metrics_port = int(m.group(1)), int(m.group(2))
                    ready.set()
            ready.set()

        self.pump = threading.Thread(target=pump, daemon=True)
        self.pump.start()
        if not ready.wait(timeout) or self.port is None:
            self.stop()
            raise RuntimeError("%s did not start; its log (%s):\n%s" % (name, self.log_path,
                                                                       self.tail()))

    @property
    def address(self):
        return "127.0.0.1:%d" % self.port

    def http_port(self):
        """The HTTP API's port, from the "listening" line's `http=<port>`."""
        with open(self.log_path) as f:
            m = re.search(r"listening grpc=\d+ metrics=\d+ http=(\d+)", f.read())
        if not m:
            raise AssertionError("%s announced no http port" % self.name)
        return int(m.group(1))

    def tail(self, lines=40):
        with open(self.log_path) as f:
            return "".join(f.readlines()[-lines:])

    def kill(self):
        """SIGKILL: the process dies without draining (a crash)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self, timeout=30):
        """SIGTERM, then SIGKILL after `timeout` seconds; returns the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.pump.join(5)
        self.proc.stdout.close()
        self.log.close()
        return self.proc.returncode


class Cluster:
    """The processes one test module runs; stop_all() ends every one it started."""

    def __init__(self, bins, log_dir):
        self.bins = bins
        self.log_dir = log_dir
        self.procs = []

    def start(self, name, binary, args, env=None):
        p = Proc(name, [self.bins[binary]] + args, self.log_dir, env=env)
        self.procs.append(p)
        return p

    def drafter(self, name, models, head="two-span", port=0):
        return self.start(name, "drafter", [
            "--model", os.path.join(models, "drafter"), "--target-model",
            os.path.join(models, "target"), "--head-variant", head,
            "--listen", "127.0.0.1:%d" % port, "--metrics", "127.0.0.1:0", "--threads", "1"])

    def target(self, name, models, drafter=None, in_process_drafter=False, parallel=4, extra=(),
               draft_timeout_ms=2000):
        args = ["--model", os.path.join(models, "target"), "--listen", "127.0.0.1:0",
                "--metrics", "127.0.0.1:0", "--name", name, "--parallel", str(parallel),
                "--threads", "1", "--context", "1024", "--draft-timeout-ms", str(draft_timeout_ms)]
        if drafter is not None:
            args += ["--drafter", drafter]
        if in_process_drafter:
            args += ["--drafter-model", os.path.join(models, "drafter")]
        return self.start(name, "target", args + list(extra))

    def serve(self, name, models, drafter=True, parallel=4, extra=()):
        """twinspan-serve: router, target and (in-process) drafter in one process."""
        args = ["--model", os.path.join(models, "target"), "--listen", "127.0.0.1:0",
                "--metrics", "127.0.0.1:0", "--name", name, "--parallel", str(parallel),
                "--threads", "1", "--context", "1024", "--draft-timeout-ms", "2000"]
        if drafter:
            args += ["--drafter-model", os.path.join(models, "drafter")]
        return self.start(name, "serve", args + list(extra))

    def router(self, name, config_path):
        return self.start(name, "router", ["--config", config_path, "--listen", "127.0.0.1:0",
                                           "--metrics", "127.0.0.1:0"])

    def stop_all(self):
        for p in reversed(self.procs):
            p.stop()
        self.procs = []


def make_demo(make_demo_bin, out_dir):
    subprocess.run([make_demo_bin, "--out", out_dir], check=True, stdout=subprocess.DEVNULL)
    return out_dir


def wait_ready(channel, timeout=30):
    import grpc
    grpc.channel_ready_future(channel).result(timeout=timeout)


def proc_stats(pid):
    """{"rss_kib", "threads", "fds"} of a live process, from /proc."""
    stats = {"rss_kib": 0, "threads": 0}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                stats["rss_kib"] = int(line.split()[1])
            elif line.startswith("Threads:"):
                stats["threads"] = int(line.split()[1])
    stats["fds"] = len(os.listdir("/proc/%d/fd" % pid))
    return stats


def tempdir(prefix):
    return tempfile.mkdtemp(prefix=prefix)
