"""A test lease whose acquire wins (SET NX PX) and then never returns: the hung call
``--call-timeout`` must catch, its stack ending on the sleeping line below."""
import secrets
import time


class HangsAfterWinning:
    def __init__(self, client, key, ttl_ms):
        self.client, self.key, self.ttl_ms = client, key, ttl_ms
        self.token = secrets.token_hex(8)

    def acquire(self):
        self.client.set(self.key, self.token, nx=True, px=self.ttl_ms)
        while True:
            time.sleep(3600)  # hung-here: the line the worker's stack must show

    def release(self):
        return self.client.eval("if redis.call('get',KEYS[1])==ARGV[1] then return "
                                "redis.call('del',KEYS[1]) end return 0", 1, self.key, self.token) == 1
