// `business`: failures that are business outcomes, for the mapper to name.
//
// Input {"account": "acme", "amount": 120, "balance": 100}:
// - amount > balance: fault `payment.declined`, body {"reason": "insufficient-funds", ...};
// - account "frozen": fault `account.frozen`, body {"status": "frozen"};
// - otherwise {"charged": amount, "balance": balance - amount}.

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function fault(code, body) {
  return { payload: { code, body: encoder.encode(JSON.stringify(body)) } };
}

export function execute(job) {
  const { account, amount, balance } = JSON.parse(decoder.decode(job.input));
  if (account === "frozen") {
    throw fault("account.frozen", { status: "frozen" });
  }
  if (amount > balance) {
    throw fault("payment.declined", { reason: "insufficient-funds", amount, balance });
  }
  return encoder.encode(JSON.stringify({ charged: amount, balance: balance - amount }));
}
