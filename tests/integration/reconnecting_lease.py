"""A test lease that opens a new connection for every command: it closes its client's pool after
each one, so a slot's connections follow each other quickly and the operating system hands a new
connection a client port (the `127.0.0.1:PORT` address the audit names) that an earlier one used.
redis-py's handshake (`HELLO 3`, ...) reaches the store before the harness's marker on each new
connection (docs/history.md, "Attribution: `sent`")."""
import secrets


class ReconnectingLease:
    def __init__(self, client, key, ttl_ms):
        self.client, self.key, self.ttl_ms = client, key, ttl_ms
        self.token = secrets.token_hex(8)

    def _fresh(self, result):
        self.client.connection_pool.disconnect()
        return result

    def acquire(self):
        return self._fresh(bool(self.client.set(self.key, self.token, nx=True, px=self.ttl_ms)))

    def release(self):
        ok = self.client.eval("if redis.call('get',KEYS[1])==ARGV[1] then return "
                              "redis.call('del',KEYS[1]) end return 0", 1, self.key, self.token) == 1
        return self._fresh(ok)
