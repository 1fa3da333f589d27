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
        succeed_on = int(json.loads(job.input)["succeed_on_attempt"])
        if job.attempt < succeed_on:
            log(Level.WARN, f"attempt {job.attempt} of job {job.id}: dependency unavailable")
            body = {"attempt": job.attempt, "succeed_on_attempt": succeed_on}
            raise Err(Fault("flaky.unavailable", json.dumps(body).encode()))
        return json.dumps({"attempt": job.attempt}).encode()
