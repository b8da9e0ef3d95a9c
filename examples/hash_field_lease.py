"""A lease kept as a field of a hash: run it with

    leasecheck run --lease examples/hash_field_lease.py:HashFieldCas
    leasecheck run --lease examples/hash_field_lease.py:HashFieldDel     # the broken release

The claim is the field `holder` of a hash named after the job key, holding a fresh token: an
``HSETNX`` creates it. Where the server has field expiry (Redis 7.4's ``HPEXPIRE``) the field gets
its own deadline; elsewhere (Redis 6.2, Valkey 8.1: the bundled servers) the hash key does
(``PEXPIRE``), which ends the field with it: the script tries the first and falls back to the
second, so the create and its deadline are one step. ``HashFieldCas`` releases with a compare-and-``HDEL`` script (only while the field
still holds its token); ``HashFieldDel`` with a plain ``HDEL``, which frees whatever claim is
there — another attempt's, once its own deadline has passed mid-job.

The checker follows the claim as the object (hash key, field): see docs/history.md, "Claims and
their owners".
"""
import secrets

FIELD = "holder"
ACQUIRE = """
if redis.call('hsetnx', KEYS[1], ARGV[1], ARGV[2]) == 1 then
  local r = redis.pcall('hpexpire', KEYS[1], ARGV[3], 'FIELDS', 1, ARGV[1])
  if type(r) == 'table' and r.err then redis.call('pexpire', KEYS[1], ARGV[3]) end
  return 1
end
return 0
"""
RELEASE = """
if redis.call('hget', KEYS[1], ARGV[1]) == ARGV[2] then return redis.call('hdel', KEYS[1], ARGV[1]) end
return 0
"""
class HashFieldCas:
    def __init__(self, client, key, ttl_ms):
        self.client, self.key, self.ttl_ms = client, key, ttl_ms
        self.token = secrets.token_hex(16)       # fresh per attempt

    def acquire(self) -> bool:
        return self.client.eval(ACQUIRE, 1, self.key, FIELD, self.token, self.ttl_ms) == 1

    def release(self) -> bool:
        return self.client.eval(RELEASE, 1, self.key, FIELD, self.token) == 1


class HashFieldDel(HashFieldCas):
    def release(self) -> bool:
        return self.client.hdel(self.key, FIELD) == 1
