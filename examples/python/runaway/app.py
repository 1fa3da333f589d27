"""`runaway`: loops forever. The host's deadline kills it (`husk.timeout`)."""

import wit_world
from wit_world.imports.types import Job


class WitWorld(wit_world.WitWorld):
    def execute(self, job: Job) -> bytes:
        n = 0
        while True:
            n += 1
