"""`fetch`: calls a service over `wasi:http` (componentize-py's bindings of
`wasi:http/outgoing-handler`, used synchronously).

Input {"url": "http://127.0.0.1:8089/price"}, optionally "repeat" (send the
request that many times). Output {"status": 200, "body": "...",
"requests": N} (the last response). A WASI HTTP error becomes fault
`http.<error-code>` (e.g. `http.http-request-denied`); a 5xx response
becomes `fetch.server-error`, a technical fault husk retries with the same
`Idempotency-Key`."""

import json
import re
from urllib.parse import urlsplit

import wit_world
from componentize_py_types import Err, Ok
from wit_world.imports import outgoing_handler, streams
from wit_world.imports import wasi_http_types as http
from wit_world.imports.husk_worker_types import Fault, Job


def fault(code: str, body: dict) -> Err:
    return Err(Fault(code, json.dumps(body).encode()))


def http_fault(error) -> Err:
    """`ErrorCode_HttpRequestDenied` -> fault `http.http-request-denied`."""
    name = type(error).__name__.removeprefix("ErrorCode_")
    code = re.sub(r"(?<!^)([A-Z])", r"-\1", name).lower()
    return fault(f"http.{code}", {"error": name})


def get(url: str) -> tuple[int, bytes]:
    parts = urlsplit(url)
    request = http.OutgoingRequest(http.Fields())
    request.set_method(http.Method_Get())
    request.set_scheme(http.Scheme_Https() if parts.scheme == "https" else http.Scheme_Http())
    request.set_authority(parts.netloc)
    request.set_path_with_query((parts.path or "/") + (f"?{parts.query}" if parts.query else ""))
    body = request.body()
    try:
        future = outgoing_handler.handle(request, None)
    except Err as error:
        raise http_fault(error.value)
    http.OutgoingBody.finish(body, None)
    while (result := future.get()) is None:
        future.subscribe().block()
    if isinstance(result, Err) or isinstance(result.value, Err):
        raise http_fault(result.value.value)
    response = result.value.value
    status = response.status()
    # A stream is a child of its body: the body must outlive it (locals
    # are dropped last-first when the function returns).
    incoming = response.consume()
    stream = incoming.stream()
    chunks = []
    while True:
        try:
            chunks.append(stream.blocking_read(64 * 1024))
        except Err as error:
            if isinstance(error.value, streams.StreamError_Closed):
                break
            code = http.http_error_code(error.value.value)
            raise http_fault(code) if code is not None else fault("http.error", {"error": "reading the body"})
    return status, b"".join(chunks)


class WitWorld(wit_world.WitWorld):
    def execute(self, job: Job) -> bytes:
        try:
            request = json.loads(job.input)
            url, repeat = request["url"], int(request.get("repeat", 1))
        except (ValueError, KeyError, TypeError) as error:
            raise fault("invalid-input", {"error": str(error)})
        status, body = 0, b""
        for _ in range(max(repeat, 1)):
            status, body = get(url)
            text = body.decode("utf-8", "replace")
            if status >= 500:
                raise fault("fetch.server-error", {"status": status, "body": text})
        return json.dumps({"status": status, "body": body.decode("utf-8", "replace"), "requests": max(repeat, 1)}).encode()
