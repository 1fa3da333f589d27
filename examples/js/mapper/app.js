// `mapper`: classifies faults by code and by a JSON body field.
//
// - `payment.declined`: business error named by the body's "reason";
// - a body with a string "status": business status;
// - codes starting with `validation.`: technical, not retryable;
// - anything else (the host's `husk.*` codes too): technical.

const decoder = new TextDecoder();

function bodyField(fault, name) {
  try {
    const body = JSON.parse(decoder.decode(fault.body));
    return body !== null && typeof body === "object" ? body[name] : undefined;
  } catch {
    return undefined;
  }
}

export function classify(fault) {
  if (fault.code === "payment.declined") {
    const reason = bodyField(fault, "reason");
    const code = typeof reason === "string" ? reason : "declined";
    return { tag: "business-error", val: { code, message: "the payment was declined" } };
  }
  const status = bodyField(fault, "status");
  if (typeof status === "string") {
    return { tag: "business-status", val: status };
  }
  if (fault.code.startsWith("validation.")) {
    return { tag: "technical-non-retryable", val: `invalid request: ${fault.code}` };
  }
  return { tag: "technical", val: `technical fault ${fault.code}` };
}
