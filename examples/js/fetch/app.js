// `fetch`: calls a service with `fetch()` (componentize-js implements it on
// wasi:http/outgoing-handler).
//
// Input {"url": "http://127.0.0.1:8089/price"}, optionally "repeat". Output
// {"status": 200, "body": "...", "requests": N}. A 5xx response becomes
// `fetch.server-error` (technical: retried with the same Idempotency-Key).
// componentize-js's fetch() reports every WASI HTTP error as one TypeError
// ("NetworkError when attempting to fetch resource") without the WASI error
// code, so a failed request becomes `http.network-error` here, not
// `http.<error-code>` as in the Rust and Python examples.
const encoder = new TextEncoder();
const decoder = new TextDecoder();

function fault(code, body) {
  return { payload: { code, body: encoder.encode(JSON.stringify(body)) } };
}

export async function execute(job) {
  let url, repeat;
  try {
    const input = JSON.parse(decoder.decode(job.input));
    url = input.url;
    repeat = Math.max(1, input.repeat ?? 1);
    if (typeof url !== "string" || !Number.isInteger(repeat)) throw new Error("url must be a string");
  } catch (error) {
    throw fault("invalid-input", { error: String(error) });
  }
  let status = 0, body = "";
  for (let i = 0; i < repeat; i++) {
    let response;
    try {
      response = await fetch(url);
      body = await response.text();
    } catch (error) {
      throw fault("http.network-error", { error: String(error?.message ?? error) });
    }
    status = response.status;
    if (status >= 500) throw fault("fetch.server-error", { status, body });
  }
  return encoder.encode(JSON.stringify({ status, body, requests: repeat }));
}
