// `{{name}}`: a husk operation calling a service with fetch() (on
// wasi:http). Input {"url": "https://api.example.com/..."}, output
// {"status": 200, "body": "..."}. A failed request is the fault
// `http.error`, a 5xx answer `service.unavailable` (technical: husk retries
// it, and every attempt's request carries the same
// `Idempotency-Key: husk-<job id>-1`). The topic must allow the host
// (`allowed_hosts` in husk.toml; `husk run --allow-host`).
import { log } from "husk:worker/log@0.1.0";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function fault(code, body) {
  return { payload: { code, body: encoder.encode(JSON.stringify(body)) } };
}

export async function execute(job) {
  let url;
  try {
    url = JSON.parse(decoder.decode(job.input))?.url;
  } catch {
    url = undefined;
  }
  if (typeof url !== "string") throw fault("invalid-input", { error: "missing field `url`" });
  log("info", `job ${job.id} (attempt ${job.attempt}): calling ${url}`);
  let response, body;
  try {
    response = await fetch(url);
    body = await response.text();
  } catch (error) {
    throw fault("http.error", { error: String(error?.message ?? error) });
  }
  if (response.status >= 500) throw fault("service.unavailable", { status: response.status, body });
  return encoder.encode(JSON.stringify({ status: response.status, body }));
}
