"""`config`: returns the config value its input names, read through
`wasi:config/store`.

Input {"key": "endpoint"}; output {"key": "endpoint", "value": "..."}, null
when the topic has no such key."""

import json

import wit_world
from componentize_py_types import Err
from wit_world.imports import store
from wit_world.imports.types import Fault, Job


class WitWorld(wit_world.WitWorld):
    def execute(self, job: Job) -> bytes:
        try:
            key = json.loads(job.input)["key"]
            if not isinstance(key, str):
                raise TypeError("key must be a string")
        except (ValueError, KeyError, TypeError) as error:
            raise Err(Fault("invalid-input", json.dumps({"error": str(error)}).encode()))
        try:
            value = store.get(key)
        except Err as error:
            raise Err(Fault("config.unavailable", json.dumps({"error": str(error.value)}).encode()))
        return json.dumps({"key": key, "value": value}).encode()
