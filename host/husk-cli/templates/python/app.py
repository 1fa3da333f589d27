"""`{{name}}`: a husk operation. Input {"name": "Ada"}, output
{"greeting": "hello, Ada"}; input without a "name" is the fault
`invalid-input`."""

import json

import wit_world
from componentize_py_types import Err
from wit_world.imports.log import Level, log
from wit_world.imports.types import Fault, Job


class WitWorld(wit_world.WitWorld):
    def execute(self, job: Job) -> bytes:
        try:
            name = json.loads(job.input)["name"]
        except (ValueError, KeyError, TypeError):
            body = json.dumps({"error": "missing field `name`"}).encode()
            raise Err(Fault("invalid-input", body))
        log(Level.INFO, f"job {job.id} (attempt {job.attempt}): greeting {name}")
        return json.dumps({"greeting": f"hello, {name}"}).encode()
