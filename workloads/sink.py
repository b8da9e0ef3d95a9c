"""Where a job's effect lands (``--sink``): two stores of effects in the store under test, written
in one server-side step per effect.

- the *unfenced* sink accepts every effect (a plain write: what most jobs do);
- the *fenced* sink accepts an effect only if its fencing token is at least the largest one it has
  accepted for that job key, and then remembers it — a holder whose claim was taken over by a
  later claimer (a larger fence) is turned away once that claimer has written.

Both answers go into the history's ``effect`` event (``fence``, ``fenced_accepted``), and the
checker counts the stale effects each sink accepted. Sink keys live outside the run's claim
prefix, so they are never mistaken for claims.
"""
from __future__ import annotations

WRITE = """
redis.call('incr', KEYS[1])
if ARGV[2] == '' then return -1 end
local fence = tonumber(ARGV[2])
local last = tonumber(redis.call('get', KEYS[2]) or '-1')
if fence >= last then
  redis.call('set', KEYS[2], fence)
  redis.call('incr', KEYS[3])
  return 1
end
return 0
"""


class Sink:
    def __init__(self, client, run_id: str):
        self._write = client.register_script(WRITE)
        self.base = f"leasecheck-sink:{run_id}:"

    def write(self, key: str, fence: int | None) -> bool | None:
        """Record one effect; True/False = the fenced sink accepted it / turned it away,
        None = no fencing token to check (the lease has none)."""
        job = key.rsplit(":", 1)[-1]
        keys = [f"{self.base}unfenced:{job}", f"{self.base}fence:{job}", f"{self.base}fenced:{job}"]
        answer = self._write(keys=keys, args=[job, "" if fence is None else fence])
        return None if answer == -1 else answer == 1
