// `flaky`: a technical fault until a given attempt, then success.
//
// Input {"succeed_on_attempt": 3}: attempts 1 and 2 fail with
// `flaky.unavailable`, attempt 3 and later return {"attempt": N}.
import { log } from "husk:worker/log@0.1.0";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function execute(job) {
  let succeedOn;
  try {
    succeedOn = JSON.parse(decoder.decode(job.input))?.succeed_on_attempt;
  } catch {
    succeedOn = undefined;
  }
  if (!Number.isInteger(succeedOn) || succeedOn < 0) {
    const body = { error: "succeed_on_attempt must be a whole number" };
    throw { payload: { code: "invalid-input", body: encoder.encode(JSON.stringify(body)) } };
  }
  if (job.attempt < succeedOn) {
    log("warn", `attempt ${job.attempt} of job ${job.id}: dependency unavailable`);
    const body = { attempt: job.attempt, succeed_on_attempt: succeedOn };
    throw { payload: { code: "flaky.unavailable", body: encoder.encode(JSON.stringify(body)) } };
  }
  return encoder.encode(JSON.stringify({ attempt: job.attempt }));
}
