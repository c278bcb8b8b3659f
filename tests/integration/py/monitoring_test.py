"""The dashboard and the rules against live services and a real Prometheus.

Starts an A/B deployment on 127.0.0.1 with the demo pair (router; variant "two-span": a target
with its drafter over gRPC; variant "none": a target alone), and Debian's prometheus scraping all
four every second with deploy/'s rules loaded. Sends a bounded load through the router, then:
- the drafter is killed at the end and the drafted variant keeps serving (plain rounds);
- every metric that a Grafana query or a Prometheus rule names is one the live processes export
  (their real /metrics), with the labels the queries group by;
- Prometheus loads the rules (its rules API reports them healthy);
- the dashboard's main panels, evaluated by Prometheus with the dashboard's own PromQL, are drawn
  with matplotlib into $TWINSPAN_BUILD_DIR/deploy-dashboard.png, and each has data.

Run by ctest with TWINSPAN_BUILD_DIR, TWINSPAN_SOURCE_DIR and TWINSPAN_PROTO_DIR set.
"""
import concurrent.futures
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import twinspan_procs  # noqa: E402

SOURCE = os.environ.get("TWINSPAN_SOURCE_DIR", "")
BUILD = os.environ.get("TWINSPAN_BUILD_DIR", "")
PROTO = os.environ.get("TWINSPAN_PROTO_DIR", os.path.join(SOURCE, "proto"))
DASHBOARD = os.path.join(SOURCE, "deploy", "grafana", "twinspan-dashboard.json")
RULES = os.path.join(SOURCE, "deploy", "prometheus", "twinspan-rules.yaml")
MODELS = os.path.join(SOURCE, "models", "demo")
LOAD_SECONDS = 25
# Panels drawn into the picture: the ones an operator reads an A/B split and health from.
MAIN_PANELS = ("Tokens per round by head variant", "Draft acceptance rate by head variant",
               "Router: requests by head variant", "Time to first token",
               "Inter-token latency", "Generated tokens per second")


def get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def queries():
    """(where, PromQL) of every dashboard target and every rule."""
    import yaml
    with open(DASHBOARD) as f:
        dash = json.load(f)
    out = [("panel " + p["title"], t["expr"]) for p in dash["panels"]
           for t in p.get("targets", [])]
    with open(RULES) as f:
        for g in yaml.safe_load(f)["groups"]:
            for r in g["rules"]:
                out.append(("rule " + r.get("alert", r.get("record")), r["expr"]))
    return out


def groupings(expr):
    """(labels, the aggregated expression) of each `by (labels) (...)` in expr."""
    out = []
    for m in re.finditer(r"by \(([^)]*)\)\s*\(", expr):
        depth, i = 1, m.end()
        while depth and i < len(expr):
            depth += {"(": 1, ")": -1}.get(expr[i], 0)
            i += 1
        out.append(([x.strip() for x in m.group(1).split(",") if x.strip()], expr[m.end():i]))
    return out


def parse_exposition(text):
    """{metric name: set of label names} from Prometheus text format samples."""
    names = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s", line)
        if m:
            labels = set(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="', m.group(3) or ""))
            names.setdefault(m.group(1), set()).update(labels)
    return names


class MonitoringTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="twinspan-monitoring-")
        twinspan_procs.generate_stubs(PROTO, cls.tmp)
        bins = {b: os.path.join(BUILD, "twinspan-" + b) for b in ("target", "drafter", "router")}
        cls.cluster = twinspan_procs.Cluster(bins, cls.tmp)
        cls.prometheus = None
        try:
            cls.start()
        except Exception:
            cls.tearDownClass()
            raise

    @classmethod
    def start(cls):
        c = cls.cluster
        drafter = c.drafter("drafter", MODELS)
        drafted = c.target("two-span", MODELS, drafter=drafter.address)
        plain = c.target("none", MODELS)
        config = {"listen": "127.0.0.1:0", "metrics": "127.0.0.1:0", "health_interval_ms": 200,
                  "pools": [{"variant": "two-span", "weight": 1, "workers": [drafted.address]},
                            {"variant": "none", "weight": 1, "workers": [plain.address]}]}
        path = os.path.join(cls.tmp, "router.json")
        with open(path, "w") as f:
            json.dump(config, f)
        router = c.router("router", path)
        cls.procs = {"drafter": drafter, "target two-span": drafted, "target none": plain,
                     "router": router}
        port = free_port()
        shutil.copy(RULES, os.path.join(cls.tmp, "rules.yaml"))
        targets = [("127.0.0.1:%d" % p.metrics_port, role.split()[0])
                   for role, p in cls.procs.items()]
        with open(os.path.join(cls.tmp, "prometheus.yml"), "w") as f:
            f.write("global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
                    "rule_files: [rules.yaml]\nscrape_configs:\n")
            for addr, component in targets:
                f.write("  - job_name: %s-%s\n    static_configs: [{targets: ['%s'], labels: "
                        "{twinspan_component: %s}}]\n" % (component, addr.rsplit(":", 1)[1], addr,
                                                 component))
        cls.prom_url = "http://127.0.0.1:%d" % port
        cls.prom_log = open(os.path.join(cls.tmp, "prometheus.log"), "w")
        cls.prometheus = subprocess.Popen(
            ["prometheus", "--config.file=" + os.path.join(cls.tmp, "prometheus.yml"),
             "--storage.tsdb.path=" + os.path.join(cls.tmp, "tsdb"),
             "--web.listen-address=127.0.0.1:%d" % port], stdout=cls.prom_log,
            stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while True:
            try:
                get(cls.prom_url + "/-/ready")
                break
            except OSError:
                if time.monotonic() > deadline or cls.prometheus.poll() is not None:
                    raise RuntimeError("prometheus did not start")
                time.sleep(0.3)
        cls.load(router)

    @classmethod
    def load(cls, router):
        import grpc
        from twinspan.v1 import serving_pb2, serving_pb2_grpc
        channel = grpc.insecure_channel(router.address)
        twinspan_procs.wait_ready(channel, 60)
        stub = serving_pb2_grpc.ServingStub(channel)
        prompts = ["def is_prime(n):", "def fib(n):", "class Stack:", "import os\n",
                   "def main():", "for i in range(10):"]

        def one(i):
            r = serving_pb2.GenerateRequest(request_id="m%d" % i, prompt=prompts[i % 6],
                                            session_key="session-%d" % i)
            r.sampling.max_tokens = 24
            r.sampling.ignore_eos = True
            for attempt in range(50):
                try:
                    return list(stub.Generate(r, timeout=60))[-1].final.head_variant
                except grpc.RpcError as e:  # the router's first health round
                    if e.code() != grpc.StatusCode.UNAVAILABLE:
                        raise
                    time.sleep(0.2)
            raise RuntimeError("router stayed unavailable")

        cls.served = {}
        start, i = time.monotonic(), 0
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            while time.monotonic() - start < LOAD_SECONDS:
                for variant in pool.map(one, range(i, i + 4)):
                    cls.served[variant] = cls.served.get(variant, 0) + 1
                i += 4
        # The drafter dies: the drafted variant keeps serving from plain rounds, and the
        # fallback series the drafter-down alert reads appears.
        cls.live = {}
        cls.scrape(cls.procs)
        # Killed in the middle of a drafted request: that stream falls back (its fallback rounds
        # counted) and finishes with the same kind of reply.
        r = serving_pb2.GenerateRequest(request_id="killed", prompt=prompts[0],
                                        head_variant="two-span")
        r.sampling.max_tokens = 160
        r.sampling.ignore_eos = True
        stream = stub.Generate(r, timeout=120)
        next(stream)
        cls.procs["drafter"].kill()
        final = list(stream)[-1].final
        cls.served["two-span, drafter killed mid-request"] = final.completion_tokens
        for j in range(4):
            r = serving_pb2.GenerateRequest(request_id="after-%d" % j, prompt=prompts[j],
                                            head_variant="two-span")
            r.sampling.max_tokens = 8
            r.sampling.ignore_eos = True
            final = list(stub.Generate(r, timeout=60))[-1].final
            cls.served["two-span after the drafter died"] = final.completion_tokens
        channel.close()
        cls.scrape({k: p for k, p in cls.procs.items() if k != "drafter"})
        time.sleep(3)  # the last scrapes

    @classmethod
    def scrape(cls, procs):
        """Adds what each process's real /metrics exports to cls.live."""
        for p in procs.values():
            for name, labels in parse_exposition(
                    get("http://127.0.0.1:%d/metrics" % p.metrics_port)).items():
                cls.live.setdefault(name, set()).update(labels)

    @classmethod
    def tearDownClass(cls):
        if cls.prometheus is not None:
            cls.prometheus.terminate()
            cls.prometheus.wait(30)
            cls.prom_log.close()
        cls.cluster.stop_all()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def query(self, expr, **params):
        path = "/api/v1/query_range" if "start" in params else "/api/v1/query"
        url = self.prom_url + path + "?" + urllib.parse.urlencode(dict(params, query=expr))
        body = json.loads(get(url, timeout=20))
        self.assertEqual(body["status"], "success", (expr, body))
        return body["data"]["result"]

    def test_queries_name_only_live_metrics(self):
        live = self.live
        self.assertGreater(len(live), 15)
        for where, expr in queries():
            names = set(re.findall(r"\b(twinspan_[a-z0-9_]+)", expr)) - {"twinspan_component"}
            self.assertTrue(names or "twinspan:" in expr, where)
            for name in names:
                self.assertIn(name, live, "%s names %s, which no live process exports" %
                              (where, name))
            for labels, inner in groupings(expr):
                if "twinspan_" not in inner.replace("twinspan_component", ""):
                    continue  # Prometheus' own series (up)
                inner_names = set(re.findall(r"\b(twinspan_[a-z0-9_]+)", inner)) - {
                    "twinspan_component"}
                carried = set().union(*(live.get(n, set()) for n in inner_names)) | {"le"}
                for label in labels:
                    self.assertIn(label, carried, "%s groups %s by %s, a label they do not "
                                  "carry" % (where, sorted(inner_names), label))

    def test_drafter_down_expression_sees_the_killed_drafter(self):
        rule = next(e for w, e in queries() if w == "rule TwinspanDrafterDown")
        result = self.query(rule)
        instances = {r["metric"].get("instance") for r in result}
        self.assertIn("127.0.0.1:%d" % self.procs["drafter"].metrics_port, instances, result)

    def test_prometheus_loads_the_rules(self):
        body = json.loads(get(self.prom_url + "/api/v1/rules"))
        rules = [r for g in body["data"]["groups"] for r in g["rules"]]
        self.assertEqual(len(rules), sum(1 for w, _ in queries() if w.startswith("rule ")))
        self.assertTrue(all(r["health"] in ("ok", "unknown") for r in rules),
                        [(r["name"], r.get("lastError")) for r in rules])
        alerts = [r for r in rules if r["type"] == "alerting"]
        for name in ("TwinspanDrafterDown", "TwinspanAcceptanceCollapse",
                     "TwinspanHighTimeToFirstToken", "TwinspanQueueGrowing"):
            self.assertIn(name, [a["name"] for a in alerts])

    def test_dashboard_panels_drawn_from_the_run(self):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        self.assertEqual(set(self.served), {"two-span", "none", "two-span after the drafter died",
                                            "two-span, drafter killed mid-request"}, self.served)
        with open(DASHBOARD) as f:
            panels = {p["title"]: p for p in json.load(f)["panels"]}
        end = time.time()
        start = end - LOAD_SECONDS - 10
        fig, axes = plt.subplots(2, 3, figsize=(15, 8))
        for ax, title in zip(axes.flat, MAIN_PANELS):
            ax.set_title(title, fontsize=10)
            drawn = 0
            for t in panels[title]["targets"]:
                expr = t["expr"].replace("$__rate_interval", "5s")
                for series in self.query(expr, start=start, end=end, step=1):
                    points = [(float(ts) - start, float(v)) for ts, v in series["values"]
                              if v not in ("NaN", "+Inf", "-Inf")]
                    if not points:
                        continue
                    label = ",".join("%s=%s" % kv for kv in sorted(series["metric"].items()))
                    if t.get("legendFormat"):
                        label = re.sub(r"\{\{\s*(\w+)\s*\}\}",
                                       lambda m: series["metric"].get(m.group(1), ""),
                                       t["legendFormat"])
                    ax.plot(*zip(*points), label=label or expr[:30])
                    drawn += 1
            ax.set_xlabel("seconds")
            ax.grid(alpha=0.3)
            if drawn:
                ax.legend(fontsize=7)
            self.assertGreater(drawn, 0, "panel %r has no data" % title)
        fig.suptitle("Twinspan dashboard, live run: A/B two-span (drafted) vs none (plain), "
                     "demo pair on the CPU")
        fig.tight_layout()
        out = os.path.join(BUILD, "deploy-dashboard.png")
        fig.savefig(out, dpi=80)
        print("monitoring: dashboard panels drawn to %s; requests served %s" %
              (out, self.served), flush=True)


if __name__ == "__main__":
    unittest.main(verbosity=2)
