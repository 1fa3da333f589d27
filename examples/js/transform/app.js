// `transform`: input {"name": "Ada", "amount": 12.5}, output
// {"greeting": "hello, Ada", "amount_cents": 1250}.

const encoder = new TextEncoder();
const decoder = new TextDecoder();

// Thrown from `execute`, its `payload` is the `err` of the result: a fault.
class Fault extends Error {
  constructor(code, body) {
    super(code);
    this.payload = { code, body: encoder.encode(JSON.stringify(body)) };
  }
}

export function execute(job) {
  let input;
  try {
    input = JSON.parse(decoder.decode(job.input));
  } catch (error) {
    throw new Fault("invalid-input", { error: String(error) });
  }
  if (typeof input?.name !== "string") {
    throw new Fault("invalid-input", { error: "missing field `name`" });
  }
  const amount = Number(input.amount ?? 0);
  // Half away from zero, as the other languages round.
  const cents = Math.sign(amount) * Math.floor(Math.abs(amount) * 100 + 0.5);
  return encoder.encode(JSON.stringify({ greeting: `hello, ${input.name}`, amount_cents: cents }));
}
