"""`flaky`: a technical fault until a given attempt, then success.

Input {"succeed_on_attempt": 3}: attempts 1 and 2 fail with
`flaky.unavailable`, attempt 3 and later return {"attempt": N}."""

import json

import wit_world
from componentize_py_types import Err
from wit_world.imports.log import Level, log
from wit_world.imports.types import Fault, Job


class WitWorld(wit_world.WitWorld):
    def execute(self, job: Job) -> bytes:
        try:
            succeed_on = json.loads(job.input)["succeed_on_attempt"]
            if not isinstance(succeed_on, int) or isinstance(succeed_on, bool) or succeed_on < 0:
                raise ValueError("succeed_on_attempt must be a whole number")
        except (ValueError, KeyError, TypeError) as error:
            raise Err(Fault("invalid-input", json.dumps({"error": str(error)}).encode()))
        if job.attempt < succeed_on:
            log(Level.WARN, f"attempt {job.attempt} of job {job.id}: dependency unavailable")
            body = {"attempt": job.attempt, "succeed_on_attempt": succeed_on}
            raise Err(Fault("flaky.unavailable", json.dumps(body).encode()))
        return json.dumps({"attempt": job.attempt}).encode()
