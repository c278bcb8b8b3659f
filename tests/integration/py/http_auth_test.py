"""The HTTP API behind the gRPC port's security, end to end with curl: twinspan-serve with TLS on
its gRPC port, --auth-token-file and --http --http-plaintext (a TLS proxy in front); no token, a
wrong token and the right one; /health open only under --auth-exempt-health-metrics; the token
checked before the body is read. (HTTPS itself, without --http-plaintext: http_tls_test.py.)

Run by ctest with TWINSPAN_{SERVE,ROUTER}_BIN and TWINSPAN_MODELS_DIR set; needs curl and the
openssl command (a self-signed certificate for the gRPC port).
"""
import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import twinspan_procs  # noqa: E402

BINS = {
    "serve": os.environ.get("TWINSPAN_SERVE_BIN", ""),
    "router": os.environ.get("TWINSPAN_ROUTER_BIN", ""),
}
MODELS = os.environ.get("TWINSPAN_MODELS_DIR", "")
TOKEN = "s3cret-token_v1"
# What every refusal says, whatever was wrong: nothing about the token, the route or the body.
REFUSAL = {"error": {"message": "authentication required", "type": "authentication_error",
                     "param": None, "code": "UNAUTHENTICATED"}}

work = None
tls = None


def setUpModule():
    global work, tls
    twinspan_procs.check_binaries(BINS)
    work = twinspan_procs.tempdir("twinspan-http-auth-")
    tls = ["--tls-cert", os.path.join(work, "cert.pem"), "--tls-key", os.path.join(work, "key.pem")]
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                    "-keyout", tls[3], "-out", tls[1]], check=True, capture_output=True)
    with open(os.path.join(work, "tokens"), "w") as f:
        f.write("# the current token\n%s\n" % TOKEN)


def curl(port, path, body=None, token=None, authorization=None):
    """(status, body text, WWW-Authenticate value) of one curl call."""
    args = ["curl", "-sS", "-o", "-", "-w", "\n%{http_code}\n%header{www-authenticate}",
            "--max-time", "60"]
    if token is not None:
        authorization = "Bearer " + token
    if authorization is not None:
        args += ["-H", "Authorization: " + authorization]
    if body is not None:
        args += ["-H", "Content-Type: application/json", "--data-binary", "@-"]
    args.append("http://127.0.0.1:%d%s" % (port, path))
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    out = subprocess.run(args, input=data, capture_output=True, check=True).stdout.decode()
    text, status, challenge = out.rsplit("\n", 2)
    return int(status), text, challenge


def serve_args(name, extra=()):
    return ["--model", os.path.join(MODELS, "target"), "--listen", "127.0.0.1:0", "--metrics",
            "127.0.0.1:0", "--name", name, "--threads", "1", "--context", "256",
            "--max-message-mb", "1", "--http", "127.0.0.1:0"] + tls + list(extra)


class HttpAuthTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cluster = twinspan_procs.Cluster(BINS, work)
        tokens = ["--auth-token-file", os.path.join(work, "tokens"), "--http-plaintext"]
        try:
            cls.guarded = cls.cluster.start("guarded", "serve", serve_args("guarded", tokens))
            cls.exempt = cls.cluster.start("exempt", "serve", serve_args(
                "exempt", tokens + ["--auth-exempt-health-metrics"]))
        except Exception:
            cls.cluster.stop_all()
            raise
        cls.port = cls.guarded.http_port()
        cls.exempt_port = cls.exempt.http_port()

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop_all()

    def assertRefused(self, reply):
        status, text, challenge = reply
        self.assertEqual(status, 401, text)
        self.assertEqual(json.loads(text), REFUSAL)
        self.assertEqual(challenge, "Bearer")

    def test_no_token_is_401_with_an_openai_error_body_on_every_route(self):
        completion = {"prompt": "def f():", "max_tokens": 4}
        self.assertRefused(curl(self.port, "/v1/completions", completion))
        self.assertRefused(curl(self.port, "/v1/chat/completions",
                                {"messages": [{"role": "user", "content": "hi"}]}))
        self.assertRefused(curl(self.port, "/v1/models"))
        self.assertRefused(curl(self.port, "/health"))
        self.assertRefused(curl(self.port, "/v1/no-such-route"))  # routes are not revealed

    def test_a_wrong_token_is_401_and_says_no_more(self):
        for authorization in ["Bearer wrong-token", "Bearer " + TOKEN + "x", "Bearer " + TOKEN[:-1],
                              "Basic " + TOKEN, TOKEN, "Bearer ", "Bearer # the current token"]:
            self.assertRefused(curl(self.port, "/v1/models", authorization=authorization))
        # Checked on the headers: a body over --max-message-mb is not read, so not 413.
        self.assertRefused(curl(self.port, "/v1/completions", {"prompt": "x" * (2 << 20)},
                                token="wrong-token"))

    def test_the_right_token_is_served(self):
        status, text, _ = curl(self.port, "/v1/models", token=TOKEN)
        self.assertEqual(status, 200, text)
        self.assertEqual([m["id"] for m in json.loads(text)["data"]], ["target"])
        status, text, _ = curl(self.port, "/v1/completions", {
            "prompt": "def fibonacci(n):", "max_tokens": 8, "temperature": 0, "ignore_eos": True},
            authorization="bearer " + TOKEN)  # the scheme in any case, as RFC 6750 says
        self.assertEqual(status, 200, text)
        self.assertEqual(json.loads(text)["usage"]["completion_tokens"], 8)
        self.assertEqual(curl(self.port, "/health", token=TOKEN)[:2], (200, '{"status":"ok"}'))
        # Past the check, the API's own errors come back as before.
        status, text, _ = curl(self.port, "/v1/completions", {"prompt": "x" * (2 << 20)},
                               token=TOKEN)
        self.assertEqual(status, 413, text)

    def test_health_is_open_only_under_the_exemption(self):
        self.assertEqual(curl(self.exempt_port, "/health")[:2], (200, '{"status":"ok"}'))
        self.assertRefused(curl(self.exempt_port, "/v1/models"))
        self.assertRefused(curl(self.exempt_port, "/v1/completions", {"prompt": "x"}))
        self.assertEqual(curl(self.exempt_port, "/v1/models", token=TOKEN)[0], 200)

    def test_tokens_never_reach_the_logs(self):
        curl(self.port, "/v1/models", token="wrong-token")
        curl(self.port, "/v1/models", token=TOKEN)
        with open(self.guarded.log_path) as f:
            log = f.read()
        self.assertNotIn(TOKEN, log)
        self.assertNotIn("wrong-token", log)
        self.assertIn("behind a TLS proxy (--http-plaintext), bearer tokens", log)


if __name__ == "__main__":
    unittest.main()
