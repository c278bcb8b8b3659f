// Validates rendered Kubernetes objects offline against Kubernetes v1.36.0's OpenAPI schemas, as
// compiled by the npm package kubernetes-models 5.1.0 (and @kubernetes-models/prometheus-operator
// for ServiceMonitor / PrometheusRule): types, required fields, enums and formats. The OpenAPI
// schemas allow unknown fields, which the API server would then drop (kubectl --validate=strict
// refuses them), so the same objects are also type-checked by TypeScript against the package's
// interfaces, whose excess-property check refuses any field the schema does not name.
//   node k8s_validate.mjs OBJECTS.json NODE_MODULES_DIR
// OBJECTS.json: an array of objects. Prints one line per problem; exit 1 when there is any.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [objectsPath, modulesDir] = process.argv.slice(2);
const objects = JSON.parse(readFileSync(objectsPath, "utf8"));

// apiVersion -> the package folder of its models.
function modulePath(apiVersion, kind) {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
  if (group === "monitoring.coreos.com")
    return `@kubernetes-models/prometheus-operator/monitoring.coreos.com/${version}/${kind}`;
  return `kubernetes-models/${group ? group + "/" : ""}${version}/${kind}`;
}

const problems = [];
const seen = new Map();  // one TypeScript check per distinct object
for (const [i, obj] of objects.entries()) {
  const where = `${obj.kind}/${obj.metadata?.name} (#${i})`;
  const mod = modulePath(obj.apiVersion, obj.kind);
  let Model;
  try {
    Model = (await import(pathToFileURL(join(modulesDir, mod + ".js")).href))[obj.kind];
  } catch (e) {
    problems.push(`${where}: no schema for ${obj.apiVersion} ${obj.kind}`);
    continue;
  }
  try {
    new Model(obj).validate();
  } catch (e) {
    const details = (e.errors || []).map((x) => `${x.instancePath} ${x.message}`).join("; ");
    problems.push(`${where}: ${details || e.message}`);
  }
  const key = JSON.stringify(obj);
  if (!seen.has(key)) seen.set(key, { obj, where, mod });
}

// The strict pass: `const o: IKind = <object>;` for each distinct object.
const dir = mkdtempSync(join(tmpdir(), "k8s-validate-"));
try {
  const imports = new Map();
  const lines = [];
  let n = 0;
  for (const { obj, where, mod } of seen.values()) {
    const alias = `I${obj.kind}_${imports.size}`;
    if (!imports.has(mod)) imports.set(mod, alias);
    lines.push(`// ${where}\nexport const o${n++}: ${imports.get(mod)} = ${JSON.stringify(obj)};`);
  }
  const head = [...imports].map(([mod, alias]) => {
    const kind = mod.split("/").pop();
    return `import type { I${kind} as ${alias} } from "${mod}";`;
  });
  writeFileSync(join(dir, "objects.ts"), head.concat(lines).join("\n") + "\n");
  writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({
    compilerOptions: {
      strict: true, noEmit: true, skipLibCheck: true, module: "nodenext",
      moduleResolution: "nodenext", target: "es2022", typeRoots: [],
      baseUrl: ".", paths: { "*": [join(modulesDir, "*")] },
    },
    files: ["objects.ts"],
  }));
  try {
    execFileSync(process.execPath, [join(modulesDir, "typescript", "bin", "tsc"), "-p", dir],
                 { encoding: "utf8", stdio: "pipe" });
  } catch (e) {
    const text = readFileSync(join(dir, "objects.ts"), "utf8").split("\n");
    for (const line of (e.stdout || e.message).split("\n").filter((l) => l.includes("error"))) {
      const m = line.match(/objects\.ts\((\d+),/);
      const owner = m ? text.slice(0, Number(m[1])).reverse().find((l) => l.startsWith("//")) : "";
      problems.push(`${owner ? owner.slice(3) + ": " : ""}${line.replace(/^.*error /, "")}`);
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

for (const p of problems) console.log(p);
console.log(`k8s_validate: ${objects.length} objects (${seen.size} distinct), ` +
            `${problems.length} problems`);
process.exit(problems.length ? 1 : 0);
