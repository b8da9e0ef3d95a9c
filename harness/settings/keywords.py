"""Settings given as Python keywords (the API, the pytest fixture): ``ttl="1s"``, ``workers=4``,
``nemesis=["pause:holder", "latency"]``, ``lease=MyLease`` — read into a `RunConfig` the way a
scenario file's ``[run]`` table is read, on top of a scenario file or a replayed run.

A keyword is a setting's flag without its dashes (``ttl``, ``time_limit``, ``job_duration``,
``backend``, ``store_image`` ...) or its `RunConfig` field name (``ttl_s`` ...); durations take a number of
seconds or a string such as ``"1.5s"``. An unknown keyword or a bad value raises `UsageError`
naming it and the fix, before anything starts.
"""
from __future__ import annotations

from pathlib import Path

from leasecheck.harness.errors import UsageError
from leasecheck.harness.settings.config import RunConfig, settings
from leasecheck.harness.settings.replay import replayed  # noqa: F401 - the API and the CLI read it here
from leasecheck.harness.settings.scenario import convert, load_scenario


def keywords() -> dict[str, tuple[str, object]]:
    """keyword -> (RunConfig field, kind): every setting a user makes (`settings`), by its flag's
    name (``time_limit`` for ``--time-limit``) and by its field name (``time_limit_s``)."""
    out: dict[str, tuple[str, object]] = {}
    for name, setting in settings().items():
        if not setting.flag:
            continue
        out[name] = (name, setting.kind)
        out[setting.flag.lstrip("-").replace("-", "_")] = (name, setting.kind)
    return out


def lease_spec(lease) -> str:
    """The ``--lease`` value for a lease class (``module:Name``, which worker processes import) or
    a string (a built-in name or ``path.py:Name``, passed as given)."""
    if isinstance(lease, str):
        return lease
    if not isinstance(lease, type):
        raise UsageError(f"lease={lease!r}: give a lease class or a string (a built-in name or FILE.py:Class)")
    module, qualname = lease.__module__, lease.__qualname__
    if "<locals>" in qualname:
        raise UsageError(f"lease={qualname}: a class defined inside a function cannot be imported by the worker "
                         "processes; define it at module level (or pass 'FILE.py:Class')")
    if "." in qualname or module == "__main__":
        raise UsageError(f"lease={module}.{qualname}: worker processes import a lease as module:Name; define it "
                         "at the top level of an importable module (or pass 'FILE.py:Class')")
    return f"{module}:{qualname}"


def _value(key: str, value, kind):
    if key == "lease":
        return lease_spec(value)
    if key == "nemesis" and isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value) or None
    if value is None:
        return None
    if kind is str and isinstance(value, Path):
        value = str(value)
    return convert(value, kind, f"{key}={value!r}", key)


def config_from(options: dict, scenario: Path | str | None = None, replay: Path | str | None = None
                ) -> tuple[RunConfig, dict[str, str]]:
    """(the configuration, how each setting was said for the preflight's errors): defaults <
    ``scenario`` file or ``replay``\\ed run < ``options``."""
    if scenario is not None and replay is not None:
        raise UsageError("scenario= and replay= both name a configuration; pick one")
    given: dict[str, str] = {}
    base: dict = {}
    if scenario is not None:
        base, steps = load_scenario(Path(scenario), origins=given)
        base["schedule"] = steps or None
    elif replay is not None:
        base = replayed(Path(replay), "replay=", origins=given)
    known = keywords()
    for key, value in options.items():
        if key not in known:
            raise UsageError(f"{key}=: no such setting; the settings are {', '.join(sorted(known))}")
        name, kind = known[key]
        base[name] = _value(key, value, kind)
        given[name] = f"arg:{key}"
    return RunConfig(**base), given
