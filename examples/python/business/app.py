"""`business`: failures that are business outcomes, for the mapper to name.

Input {"account": "acme", "amount": 120, "balance": 100}:
- amount > balance: fault `payment.declined`, body {"reason": "insufficient-funds", ...};
- account "frozen": fault `account.frozen`, body {"status": "frozen"};
- otherwise {"charged": amount, "balance": balance - amount}."""

import json

import wit_world
from componentize_py_types import Err
from wit_world.imports.types import Fault, Job


def fault(code: str, body: dict) -> Err:
    return Err(Fault(code, json.dumps(body).encode()))


class WitWorld(wit_world.WitWorld):
    def execute(self, job: Job) -> bytes:
        payment = json.loads(job.input)
        account, amount, balance = payment["account"], payment["amount"], payment["balance"]
        if account == "frozen":
            raise fault("account.frozen", {"status": "frozen"})
        if amount > balance:
            raise fault("payment.declined", {"reason": "insufficient-funds", "amount": amount, "balance": balance})
        return json.dumps({"charged": amount, "balance": balance - amount}).encode()
