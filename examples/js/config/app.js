// `config`: returns the config value its input names, read through
// wasi:config/store.
//
// Input {"key": "endpoint"}; output {"key": "endpoint", "value": "..."},
// null when the topic has no such key.
import { get } from "wasi:config/store@0.2.0-rc.1";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function execute(job) {
  let key;
  try {
    key = JSON.parse(decoder.decode(job.input))?.key;
  } catch {
    key = undefined;
  }
  if (typeof key !== "string") {
    throw { payload: { code: "invalid-input", body: encoder.encode(JSON.stringify({ error: "key must be a string" })) } };
  }
  const value = get(key) ?? null;
  return encoder.encode(JSON.stringify({ key, value }));
}
