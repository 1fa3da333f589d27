// `{{name}}`: a husk operation. Input {"name": "Ada"}, output
// {"greeting": "hello, Ada"}; input without a "name" is the fault
// `invalid-input`.
import { log } from "husk:worker/log@0.1.0";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function execute(job) {
  let name;
  try {
    name = JSON.parse(decoder.decode(job.input)).name;
  } catch {
    name = undefined;
  }
  if (typeof name !== "string") {
    // A thrown object's `payload` is the fault (the `err` of the result).
    const body = encoder.encode(JSON.stringify({ error: "missing field `name`" }));
    throw { payload: { code: "invalid-input", body } };
  }
  log("info", `job ${job.id} (attempt ${job.attempt}): greeting ${name}`);
  return encoder.encode(JSON.stringify({ greeting: `hello, ${name}` }));
}
