"""``token-cas-ifeq``: ``token-cas`` renewed with Valkey's own conditional write instead of a
script: ``SET key token IFEQ token PX ttl`` extends the claim only while the key still holds this
attempt's token (Valkey 8.1 and later). A server without IFEQ would answer a syntax error on every
renewal, so the lease refuses such a server before the run (``check_server``)."""
import re

from leasecheck.workloads.leases.token_cas import TokenCas

IFEQ_SINCE = (8, 1)


class TokenCasIfeq(TokenCas):
    def renew(self) -> bool:
        return bool(self.client.execute_command("SET", self.key, self.token, "IFEQ", self.token, "PX", self.ttl_ms))

    @staticmethod
    def check_server(version: str) -> None:
        m = re.search(r"Valkey server v=(\d+)\.(\d+)", version)
        if not m or (int(m[1]), int(m[2])) < IFEQ_SINCE:
            said = f" (the store is {version.split(' sha=')[0]})" if version else ""
            raise ValueError(f"renews with SET ... IFEQ, which only Valkey 8.1 and later have{said}; "
                             "add --server valkey")
