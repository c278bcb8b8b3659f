"""HTTPS on --http with the gRPC port's --tls-cert/--tls-key, against a CA the test makes with
openssl: curl and the official `openai` npm client over HTTPS (whole, streamed, structured);
client certificates required under --tls-ca (none or another CA's refused); a rotated
certificate served after --tls-reload-seconds; twinspan-router serving HTTPS too; and
--http-plaintext still serving plaintext for a TLS-terminating proxy.

Run by ctest with TWINSPAN_{SERVE,ROUTER}_BIN, TWINSPAN_MODELS_DIR and TWINSPAN_OPENAI_PACKAGE set;
needs curl, node and the openssl command.
"""
import json
import os
import shutil
import ssl
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import twinspan_procs  # noqa: E402

BINS = {
    "serve": os.environ.get("TWINSPAN_SERVE_BIN", ""),
    "router": os.environ.get("TWINSPAN_ROUTER_BIN", ""),
}
MODELS = os.environ.get("TWINSPAN_MODELS_DIR", "")
OPENAI_PACKAGE = os.environ.get("TWINSPAN_OPENAI_PACKAGE", "")
NODE_CHECK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "js",
                          "openai_client_check.mjs")

work = None
cluster = None


def openssl(*args):
    subprocess.run(["openssl"] + list(args), check=True, capture_output=True)


def make_ca(name):
    """A self-signed CA: (cert, key) paths."""
    cert, key = os.path.join(work, name + "-ca.pem"), os.path.join(work, name + "-ca.key")
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-days", "1", "-subj", "/CN=" + name + " test CA", "-keyout", key, "-out", cert,
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    return cert, key


def issue(ca, name):
    """A leaf for 127.0.0.1 and localhost signed by `ca`, for servers and clients: (cert, key)."""
    cert, key = os.path.join(work, name + ".pem"), os.path.join(work, name + ".key")
    csr = os.path.join(work, name + ".csr")
    ext = os.path.join(work, name + ".ext")
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                "extendedKeyUsage=serverAuth,clientAuth\n")
    openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-subj", "/CN=" + name, "-keyout", key, "-out", csr)
    openssl("x509", "-req", "-in", csr, "-CA", ca[0], "-CAkey", ca[1], "-CAcreateserial",
            "-days", "1", "-extfile", ext, "-out", cert)
    return cert, key


def setUpModule():
    global work, cluster
    twinspan_procs.check_binaries(BINS)
    work = twinspan_procs.tempdir("twinspan-http-tls-")
    cluster = twinspan_procs.Cluster(BINS, work)


def tearDownModule():
    cluster.stop_all()


def curl(url, ca=None, cert=None, body=None):
    """(curl's exit code, HTTP status, body text)."""
    args = ["curl", "-sS", "-N", "-o", "-", "-w", "\n%{http_code}", "--max-time", "60"]
    if ca:
        args += ["--cacert", ca]
    if cert:
        args += ["--cert", cert[0], "--key", cert[1]]
    if body is not None:
        args += ["-H", "Content-Type: application/json", "--data-binary", json.dumps(body)]
    out = subprocess.run(args + [url], capture_output=True)
    text, _, status = out.stdout.decode().rpartition("\n")
    return out.returncode, int(status or 0), text


def serve_args(name, tls, extra=()):
    return ["--model", os.path.join(MODELS, "target"), "--listen", "127.0.0.1:0", "--metrics",
            "127.0.0.1:0", "--name", name, "--threads", "1", "--context", "512",
            "--http", "127.0.0.1:0", "--tls-cert", tls[0], "--tls-key", tls[1]] + list(extra)


class HttpsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.ca = make_ca("http")
        cls.other_ca = make_ca("other")
        # The served files are copies, so rotating them leaves the originals for the checks.
        first = issue(cls.ca, "server-a")
        cls.served = (os.path.join(work, "served.pem"), os.path.join(work, "served.key"))
        shutil.copy(first[0], cls.served[0])
        shutil.copy(first[1], cls.served[1])
        cls.client = issue(cls.ca, "client")
        cls.stranger = issue(cls.other_ca, "stranger")
        cls.server_b = issue(cls.ca, "server-b")
        cls.https = cluster.start("https", "serve", serve_args(
            "https", cls.served, ["--tls-reload-seconds", "1"]))
        cls.mutual = cluster.start("mutual", "serve", serve_args(
            "mutual", cls.server_b, ["--tls-ca", cls.ca[0]]))
        cls.url = "https://127.0.0.1:%d" % cls.https.http_port()
        cls.mutual_url = "https://127.0.0.1:%d" % cls.mutual.http_port()

    def test_curl_over_https_whole_and_streamed(self):
        self.assertEqual(curl(self.url + "/health", ca=self.ca[0]), (0, 200, '{"status":"ok"}'))
        code, status, text = curl(self.url + "/v1/completions", ca=self.ca[0], body={
            "prompt": "def fibonacci(n):", "max_tokens": 8, "ignore_eos": True, "stream": True})
        self.assertEqual((code, status), (0, 200), text)
        self.assertTrue(text.rstrip().endswith("data: [DONE]"), text)
        # Another CA's view of the server: not trusted; plaintext to the HTTPS port: no reply.
        self.assertNotEqual(curl(self.url + "/health", ca=self.other_ca[0])[0], 0)
        self.assertNotEqual(curl(self.url.replace("https", "http") + "/health")[1], 200)
        with open(self.https.log_path) as f:
            self.assertIn("HTTPS", f.read())

    def test_the_official_openai_client_over_https(self):
        if not os.path.isdir(OPENAI_PACKAGE):
            self.fail("the npm openai package is not installed at %r" % OPENAI_PACKAGE)
        env = dict(os.environ, NODE_EXTRA_CA_CERTS=self.ca[0])
        out = subprocess.run(["node", NODE_CHECK, OPENAI_PACKAGE, self.url + "/v1"], env=env,
                             capture_output=True, text=True, timeout=300)
        self.assertEqual(out.returncode, 0, out.stderr)
        result = json.loads(out.stdout.strip().splitlines()[-1])
        self.assertEqual(result["models"], ["target"])
        self.assertEqual(result["whole_sha"], result["stream_sha"])
        self.assertEqual(result["stream_usage"]["completion_tokens"], 16)
        self.assertEqual(sorted(result["structured"]), ["n", "name"])

    def test_client_certificates_are_required_under_tls_ca(self):
        self.assertEqual(curl(self.mutual_url + "/health", ca=self.ca[0], cert=self.client),
                         (0, 200, '{"status":"ok"}'))
        code, status, _ = curl(self.mutual_url + "/health", ca=self.ca[0])
        self.assertNotEqual(code, 0)
        self.assertEqual(status, 0)
        code, status, _ = curl(self.mutual_url + "/health", ca=self.ca[0], cert=self.stranger)
        self.assertNotEqual(code, 0)
        self.assertEqual(status, 0)

    def test_a_rotated_certificate_is_served_without_a_restart(self):
        def served_pem():
            return ssl.get_server_certificate(("127.0.0.1", self.https.http_port()))

        def pem_of(path):
            with open(path) as f:
                return ssl.DER_cert_to_PEM_cert(ssl.PEM_cert_to_DER_cert(f.read()))

        rotated = issue(self.ca, "server-rotated")
        self.assertEqual(served_pem(), pem_of(self.served[0]))
        shutil.copy(rotated[1], self.served[1])
        shutil.copy(rotated[0], self.served[0])
        deadline = time.time() + 15
        while served_pem() != pem_of(rotated[0]) and time.time() < deadline:
            time.sleep(0.2)
        self.assertEqual(served_pem(), pem_of(rotated[0]))
        self.assertEqual(curl(self.url + "/health", ca=self.ca[0])[:2], (0, 200))


class HttpsElsewhereTest(unittest.TestCase):
    def test_router_serves_https_beside_its_tls_port(self):
        ca = make_ca("router")
        tls = issue(ca, "router")
        config = os.path.join(work, "router.json")
        with open(config, "w") as f:
            json.dump({"pools": [{"variant": "none", "weight": 1, "workers": ["127.0.0.1:1"]}],
                       "http": "127.0.0.1:0"}, f)
        router = cluster.start("router", "router", [
            "--config", config, "--listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0",
            "--tls-cert", tls[0], "--tls-key", tls[1]])
        code, status, text = curl("https://127.0.0.1:%d/v1/models" % router.http_port(), ca=ca[0])
        self.assertEqual(code, 0, text)
        self.assertNotEqual(status, 0)
        router.stop()

    def test_http_plaintext_stays_plaintext_for_a_proxy(self):
        ca = make_ca("proxy")
        tls = issue(ca, "proxied")
        serve = cluster.start("proxied", "serve", serve_args("proxied", tls, ["--http-plaintext"]))
        url = "http://127.0.0.1:%d/health" % serve.http_port()
        self.assertEqual(curl(url), (0, 200, '{"status":"ok"}'))
        serve.stop()


if __name__ == "__main__":
    unittest.main()
