"""The effective configuration of a run: plain data, frozen once built, and saved as
``config.json`` in the run directory (the seed included), so the run can be checked and repeated
from that file alone.

Nothing here looks at the machine: ``leasecheck.harness.run.preflight`` checks a configuration against it and
returns the completed copy with the run's plan. A field filled later (the store's port once it
listens, the proxy's port) is set by building a new copy with ``dataclasses.replace``."""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path

from leasecheck.rundir import load_config, save_config

DEFAULT_JOB_DURATION = "90%:0.4s,10%:1.6s"
DEFAULT_RETRY_DELAY = "5ms..20ms"


def _setting(default, scenario: str | None = None, kind=str):
    """A field a user sets: repeated by ``--replay``; ``scenario``: its key in a scenario file's
    ``[run]`` table (read as ``kind``: str, int, float, bool or "duration")."""
    return field(default=default, metadata={"replay": True, "scenario": scenario, "kind": kind})


@dataclass(frozen=True)
class RunConfig:
    lease: str = _setting("token-cas", "lease")
    workers: int = _setting(8, "workers", int)
    slots: int = _setting(1, "slots", int)
    jobs: int = _setting(1, "jobs", int)
    ttl_s: float = _setting(1.0, "ttl", "duration")
    job_duration: str = _setting(DEFAULT_JOB_DURATION, "job_duration")
    retry_delay: str = _setting(DEFAULT_RETRY_DELAY, "retry_delay")
    time_limit_s: float = _setting(30.0, "time_limit", "duration")
    seed: int | None = _setting(None, "seed", int)
    max_overlap: float | None = _setting(None, "max_overlap", float)
    store_bin: str | None = _setting(None)
    store_url: str | None = _setting(None)
    server: str = _setting("redis", "server")   # redis | valkey: which server binary every embedded node runs
    server_version: str = ""          # the binary's `--version` line, filled by the preflight
    store_port: int | None = None
    client_timeout_s: float | None = _setting(None, "client_timeout", "duration")
    client_retries: int | None = _setting(None, "client_retries", int)
    results_dir: str = "results"
    name: str | None = _setting(None, "name")
    nemesis: str | None = _setting(None, "nemesis")
    nemesis_interval_s: float = _setting(10.0, "nemesis_interval", "duration")
    schedule: list | None = None      # explicit fault steps (scenario file or --replay)
    toxiproxy_url: str | None = _setting(None)  # a real Toxiproxy server instead of the embedded proxy
    proxy: bool = _setting(False)     # route workers through the proxy even without network faults
    backend: str = _setting("embedded")   # embedded | docker | compose (leasecheck.harness.stores)
    store_image: str | None = _setting(None)  # --backend docker: the store image
    sink: bool = _setting(False, "sink", bool)  # effects land in fenced and unfenced sinks in the store
    audit: bool = _setting(True)      # record the store's MONITOR stream (off: history-only checking)
    # A drawn (random) schedule plays one fault at a time, and so does its --replay.
    faults_in_turn: bool = _setting(False)
    topology: str = _setting("single", "topology")   # single | redlock (leasecheck.harness.stores.topology)
    nodes: int | None = _setting(None, "nodes", int)  # --topology redlock: how many independent masters (default 5)
    replicas: int | None = _setting(None, "replicas", int)    # --topology replicated: replicas of the primary (default 1)
    sentinels: int | None = _setting(None, "sentinels", int)  # --topology replicated: Sentinel processes (default 3)
    # Filled in by the preflight (run id, key prefix, store address) and the runner (ports).
    run_id: str = ""
    key_prefix: str = ""
    store_host: str = "127.0.0.1"
    store_db: int = 0
    client_port: int | None = None    # where workers connect: the proxy's port, or the store's
    store_nodes: list | None = None   # several nodes: [{"name", "port", "client_port"}] per node (+ "peer_port")
    sentinel_ports: list | None = None   # --topology replicated: where the Sentinels listen
    extra: dict = field(default_factory=dict)

    @property
    def ttl_ms(self) -> int:
        return max(1, round(self.ttl_s * 1000))

    @property
    def scenario(self) -> str:
        return self.name or short_lease_name(self.lease)

    def job_keys(self) -> list[str]:
        return [f"{self.key_prefix}job:{i}" for i in range(self.jobs)]

    def to_json(self) -> dict:
        d = asdict(self)
        d["ttl_ms"] = self.ttl_ms
        d["scenario"] = self.scenario
        d["time_limit_s"] = self.time_limit_s
        return d

    @classmethod
    def from_json(cls, d: dict) -> "RunConfig":
        names = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in d.items() if k in names})

    def with_(self, **changes) -> "RunConfig":
        """A copy with ``changes`` (the configuration itself never changes)."""
        return replace(self, **changes)

    def save(self, path: Path) -> None:
        """Write ``config.json`` (``path``: the run directory, or the file itself)."""
        save_config(path, self.to_json())

    @classmethod
    def load(cls, path: Path) -> "RunConfig":
        """Read ``config.json`` (``path``: the run directory, or the file itself)."""
        return cls.from_json(load_config(path))


def short_lease_name(lease: str) -> str:
    """A short, readable directory name for a lease: a built-in keeps its name; a plugin
    ``path/to/my_lease.py:MyLease`` or ``pkg.my_lease:MyLease`` becomes ``my_lease-MyLease``."""
    where, sep, cls = lease.rpartition(":")
    if not sep:
        return _safe(lease)
    stem = Path(where).stem if where.endswith(".py") else where.rsplit(".", 1)[-1]
    return _safe(f"{stem}-{cls}" if stem else cls)


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "lease"


def scenario_keys() -> dict[str, tuple[str, object]]:
    """A scenario file's ``[run]`` keys: key -> (field, kind), from the fields that declare one."""
    return {f.metadata["scenario"]: (f.name, f.metadata["kind"]) for f in fields(RunConfig)
            if f.metadata.get("scenario")}


def replayed_fields() -> tuple[str, ...]:
    """The fields ``--replay`` repeats from a run's config.json: every setting a user made."""
    return tuple(f.name for f in fields(RunConfig) if f.metadata.get("replay"))

