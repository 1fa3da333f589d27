"""`transform`: input {"name": "Ada", "amount": 12.5}, output
{"greeting": "hello, Ada", "amount_cents": 1250}."""

import json
import math

import wit_world
from componentize_py_types import Err
from wit_world.imports.types import Fault, Job


def fault(code: str, body: dict) -> Err:
    return Err(Fault(code, json.dumps(body).encode()))


class WitWorld(wit_world.WitWorld):
    def execute(self, job: Job) -> bytes:
        try:
            data = json.loads(job.input)
            name = data["name"]
            amount = float(data.get("amount", 0))
        except KeyError as missing:
            raise fault("invalid-input", {"error": f"missing field `{missing.args[0]}`"})
        except (ValueError, TypeError, AttributeError) as error:
            raise fault("invalid-input", {"error": str(error)})
        # Half away from zero, as the other languages round.
        cents = int(math.copysign(math.floor(abs(amount) * 100 + 0.5), amount))
        return json.dumps({"greeting": f"hello, {name}", "amount_cents": cents}).encode()
