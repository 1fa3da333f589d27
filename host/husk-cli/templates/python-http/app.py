"""`{{name}}`: a husk operation calling a service over `wasi:http`
(componentize-py's bindings, used synchronously). Input
{"url": "https://api.example.com/..."}, output {"status": 200, "body": "..."}.
A failed request is the fault `http.error`, a 5xx answer
`service.unavailable` (technical: husk retries it, and every attempt's
request carries the same `Idempotency-Key: husk-<job id>-1`). The topic must
allow the host (`allowed_hosts` in husk.toml; `husk run --allow-host`)."""

import json
from urllib.parse import urlsplit

import wit_world
from componentize_py_types import Err
from wit_world.imports import outgoing_handler, streams
from wit_world.imports import wasi_http_types as http
from wit_world.imports.husk_worker_types import Fault, Job
from wit_world.imports.log import Level, log


def fault(code: str, body: dict) -> Err:
    return Err(Fault(code, json.dumps(body).encode()))


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
        raise fault("http.error", {"error": type(error.value).__name__})
    http.OutgoingBody.finish(body, None)
    while (result := future.get()) is None:
        future.subscribe().block()
    if isinstance(result, Err) or isinstance(result.value, Err):
        raise fault("http.error", {"error": type(result.value.value).__name__})
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
            raise fault("http.error", {"error": "reading the body failed"})
    return status, b"".join(chunks)


class WitWorld(wit_world.WitWorld):
    def execute(self, job: Job) -> bytes:
        try:
            url = json.loads(job.input)["url"]
        except (ValueError, KeyError, TypeError):
            raise fault("invalid-input", {"error": "missing field `url`"})
        log(Level.INFO, f"job {job.id} (attempt {job.attempt}): calling {url}")
        status, body = get(url)
        text = body.decode("utf-8", "replace")
        if status >= 500:
            raise fault("service.unavailable", {"status": status, "body": text})
        return json.dumps({"status": status, "body": text}).encode()
