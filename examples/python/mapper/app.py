"""`mapper`: classifies faults by code and by a JSON body field.

- `payment.declined`: business error named by the body's "reason";
- a body with a string "status": business status;
- codes starting with `validation.`: technical, not retryable;
- anything else (the host's `husk.*` codes too): technical."""

import json

import wit_world
from wit_world.imports.types import (
    BusinessError,
    Classification,
    Classification_BusinessError,
    Classification_BusinessStatus,
    Classification_Technical,
    Classification_TechnicalNonRetryable,
    Fault,
)


def body_field(fault: Fault, name: str):
    try:
        body = json.loads(fault.body)
    except ValueError:
        return None
    return body.get(name) if isinstance(body, dict) else None


class WitWorld(wit_world.WitWorld):
    def classify(self, fault: Fault) -> Classification:
        if fault.code == "payment.declined":
            reason = body_field(fault, "reason")
            code = reason if isinstance(reason, str) else "declined"
            return Classification_BusinessError(BusinessError(code, "the payment was declined"))
        status = body_field(fault, "status")
        if isinstance(status, str):
            return Classification_BusinessStatus(status)
        if fault.code.startswith("validation."):
            return Classification_TechnicalNonRetryable(f"invalid request: {fault.code}")
        return Classification_Technical(f"technical fault {fault.code}")
