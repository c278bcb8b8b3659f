"""The HTTP API under careless and hostile traffic, against twinspan-serve on 127.0.0.1: /health
answered in under 100 ms while 1,000 idle connections are held; a connection over
--http-max-connections and a request over --http-threads refused with 503 naming the flag; 200
bodies over --max-message-mb (2 MB and 20 MB, by Content-Length and chunked) refused with 413
while the server's RSS stays within 50 MB of where it started; a stream's chunked terminator
arriving in one piece.

Run by ctest with TWINSPAN_SERVE_BIN and TWINSPAN_MODELS_DIR set.
"""
import http.client
import json
import os
import resource
import socket
import statistics
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import twinspan_procs  # noqa: E402

BINS = {"serve": os.environ.get("TWINSPAN_SERVE_BIN", "")}
MODELS = os.environ.get("TWINSPAN_MODELS_DIR", "")
IDLE_CONNECTIONS = 1000

work = None
cluster = None


def setUpModule():
    global work, cluster
    twinspan_procs.check_binaries(BINS)
    # The test's own sockets and the server (which inherits the limit) each need over 1,000.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 4096 if hard == resource.RLIM_INFINITY else min(hard, 4096)
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    work = twinspan_procs.tempdir("twinspan-http-limits-")
    cluster = twinspan_procs.Cluster(BINS, work)


def tearDownModule():
    cluster.stop_all()


def start_serve(name, extra):
    return cluster.start(name, "serve", [
        "--model", os.path.join(MODELS, "target"), "--listen", "127.0.0.1:0", "--metrics",
        "127.0.0.1:0", "--name", name, "--threads", "1", "--context", "1024",
        "--http", "127.0.0.1:0"] + list(extra))


def get(port, path, timeout=10):
    """(status, headers, body) of a GET on a fresh connection."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read().decode()
    finally:
        conn.close()


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS for %d" % pid)


def raw_request(port, head, body_chunks):
    """Sends `head` then the body pieces as far as the server takes them; the reply's bytes."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    try:
        s.sendall(head)
        try:
            for chunk in body_chunks:
                s.sendall(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server refused the body and stopped reading it
        reply = b""
        try:
            while True:
                data = s.recv(65536)
                if not data:
                    break
                reply += data
        except ConnectionResetError:
            pass
        return reply
    finally:
        s.close()


class HttpLimitsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.serve = start_serve("limits", ["--max-message-mb", "1", "--http-threads", "2"])
        cls.port = cls.serve.http_port()

    def test_health_is_fast_while_a_thousand_idle_connections_are_held(self):
        idle = []
        try:
            for _ in range(IDLE_CONNECTIONS):
                idle.append(socket.create_connection(("127.0.0.1", self.port), timeout=10))
            time.sleep(0.5)
            latencies = []
            for _ in range(10):
                start = time.monotonic()
                status, _, body = get(self.port, "/health")
                latencies.append(time.monotonic() - start)
                self.assertEqual((status, body), (200, '{"status":"ok"}'))
            print("health with %d idle connections: median %.1f ms, max %.1f ms" % (
                len(idle), 1000 * statistics.median(latencies), 1000 * max(latencies)),
                file=sys.stderr)
            self.assertLess(statistics.median(latencies), 0.1, latencies)
            self.assertLess(max(latencies), 1.0, latencies)
        finally:
            for s in idle:
                s.close()

    def test_a_request_over_the_thread_limit_gets_503_with_retry_after(self):
        streams = []
        try:
            for _ in range(2):  # --http-threads 2, both held by streamed completions
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
                conn.request("POST", "/v1/completions", json.dumps(
                    {"prompt": "x", "max_tokens": 1000, "ignore_eos": True, "stream": True}),
                    {"Content-Type": "application/json"})
                response = conn.getresponse()
                self.assertEqual(response.status, 200)
                response.read1(16)
                streams.append(conn)
            # A liveness probe still gets its answer: /health needs no request thread.
            self.assertEqual(get(self.port, "/health")[0], 200)
            status, headers, body = get(self.port, "/v1/models")
            self.assertEqual(status, 503, body)
            self.assertEqual(headers.get("Retry-After"), "1")
            error = json.loads(body)["error"]
            self.assertEqual(error["code"], "UNAVAILABLE")
            self.assertIn("--http-threads", error["message"])
        finally:
            for conn in streams:
                conn.close()
        deadline = time.time() + 20
        while get(self.port, "/health")[0] != 200 and time.time() < deadline:
            time.sleep(0.1)
        self.assertEqual(get(self.port, "/health")[0], 200)

    def test_over_limit_bodies_are_refused_without_growing_memory(self):
        def content_length(size):
            head = ("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                    "\r\nContent-Length: %d\r\n\r\n" % size).encode()
            piece = b"x" * (1 << 20)
            return head, [piece] * (size >> 20)

        def chunked(size):
            head = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                    b"\r\nTransfer-Encoding: chunked\r\n\r\n")
            piece = b"100000\r\n" + b"x" * (1 << 20) + b"\r\n"
            return head, [piece] * (size >> 20) + [b"0\r\n\r\n"]

        self.assertEqual(get(self.port, "/health")[0], 200)
        before = rss_kb(self.serve.proc.pid)
        peak = before
        for i in range(200):
            size = (2 << 20) if i % 2 == 0 else (20 << 20)
            head, body = (content_length if i % 4 < 2 else chunked)(size)
            reply = raw_request(self.port, head, body)
            self.assertTrue(reply.startswith(b"HTTP/1.1 413 "), reply[:200])
            self.assertIn(b"--max-message-mb", reply)
            peak = max(peak, rss_kb(self.serve.proc.pid))
        after = rss_kb(self.serve.proc.pid)
        print("RSS over 200 refused bodies: %d MB before, %d MB peak, %d MB after" % (
            before >> 10, peak >> 10, after >> 10), file=sys.stderr)
        self.assertLess(after - before, 50 << 10)
        self.assertEqual(get(self.port, "/health")[0], 200)

    def test_the_stream_terminator_arrives_in_one_piece(self):
        # node-fetch 2 (the openai SDK v4's fetch) reports "Premature close" when the last read of
        # a chunked body does not end with the whole terminator (node-fetch#1576).
        for _ in range(5):
            s = socket.create_connection(("127.0.0.1", self.port), timeout=60)
            body = json.dumps({"prompt": "def f():", "max_tokens": 8, "stream": True})
            s.sendall(("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                       "application/json\r\nContent-Length: %d\r\n\r\n%s" % (
                           len(body), body)).encode())
            reads = []
            while not b"".join(reads).endswith(b"\r\n0\r\n\r\n"):
                data = s.recv(65536)
                self.assertTrue(data, b"".join(reads))
                reads.append(data)
            s.close()
            self.assertTrue(reads[-1].endswith(b"0\r\n\r\n"), reads[-3:])
            self.assertIn(b"data: [DONE]", b"".join(reads))


class HttpConnectionLimitTest(unittest.TestCase):
    def test_a_connection_over_the_limit_is_refused_with_503(self):
        serve = start_serve("few", ["--http-max-connections", "8"])
        port = serve.http_port()
        idle = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(8)]
        try:
            time.sleep(0.3)
            status, headers, body = get(port, "/health")
            self.assertEqual(status, 503, body)
            self.assertIn("--http-max-connections", json.loads(body)["error"]["message"])
            self.assertEqual(headers.get("Retry-After"), "1")
        finally:
            for s in idle:
                s.close()
        time.sleep(0.3)
        self.assertEqual(get(port, "/health")[:1], (200,))
        serve.stop()


if __name__ == "__main__":
    unittest.main()
