// The official `openai` npm client against Twinspan's HTTP API (run by http_test.py): a model
// list, a chat completion whole and streamed (the same token_sha256), structured output through
// response_format that parses, and an OpenAI-shaped error surfacing as the client's error class.
// Usage: node openai_client_check.mjs <openai package dir> <base url>; prints one JSON summary.
import { createRequire } from 'node:module';

const [packageDir, baseURL] = process.argv.slice(2);
const require = createRequire(packageDir + '/');
const OpenAI = require('openai').default ?? require('openai');
const client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0, timeout: 120000 });

const out = {};
const models = await client.models.list();
out.models = models.data.map((m) => m.id);
const messages = [{ role: 'user', content: 'Write a python function' }];
const whole = await client.chat.completions.create({
  model: out.models[0], messages, max_tokens: 16, temperature: 0,
});
out.whole_text = whole.choices[0].message.content;
out.whole_sha = whole.twinspan.token_sha256;
const stream = await client.chat.completions.create({
  model: out.models[0], messages, max_tokens: 16, temperature: 0, stream: true,
  stream_options: { include_usage: true },
});
let streamed = '';
let events = 0;
for await (const chunk of stream) {
  events += 1;
  if (chunk.twinspan) out.stream_sha = chunk.twinspan.token_sha256;
  if (chunk.usage) out.stream_usage = chunk.usage;
  for (const c of chunk.choices) streamed += c.delta?.content ?? '';
}
out.stream_text = streamed;
out.stream_events = events;
const schema = {
  type: 'object',
  properties: { name: { type: 'string', maxLength: 12 }, n: { type: 'integer' } },
  required: ['name', 'n'],
};
const structured = await client.chat.completions.create({
  model: out.models[0], messages: [{ role: 'user', content: 'A JSON object please' }],
  max_tokens: 64, temperature: 0.7, seed: 3,
  response_format: { type: 'json_schema', json_schema: { name: 'thing', schema } },
});
out.structured = JSON.parse(structured.choices[0].message.content);
try {
  await client.completions.create({ model: out.models[0], prompt: 'x', max_tokens: 1000000 });
  out.error = 'none';
} catch (e) {
  out.error = `${e.constructor.name} ${e.status} ${e.error?.code ?? e.code}`;
}
console.log(JSON.stringify(out));
