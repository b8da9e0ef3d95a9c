"""The ``run`` command's setting options, generated from ``RunConfig``'s declarations.

Each setting (``leasecheck.harness.settings.config.Setting``) with a flag becomes one click
option: its flag, its default (a duration shown as ``1s``), its type (a duration through
``DURATION``, a bool as ``--x/--no-x``, a choice from its registry), its help (``{leases}`` and
``{nemesis}`` filled in from the lease and fault registries) and its ``LEASECHECK_<NAME>``
variable. ``hunt`` and ``matrix`` copy ``run``'s options, so they get these too.
"""
from __future__ import annotations

import click
from click.core import ParameterSource

from leasecheck.harness.errors import UsageError
from leasecheck.harness.faults import nemesis_help
from leasecheck.harness.run.host import SERVERS
from leasecheck.harness.settings.config import LIVENESS, Setting, defaults, settings
from leasecheck.harness.settings.durations import parse_duration
from leasecheck.harness.stores import BACKENDS
from leasecheck.workloads.leases import BUILTIN


class DurationType(click.ParamType):
    name = "DURATION"

    def convert(self, value, param, ctx):
        if isinstance(value, float):
            return value
        try:
            return parse_duration(value, said_as(param, ctx))
        except UsageError as e:
            raise click.UsageError(str(e)) from None   # the message already names the option


DURATION = DurationType()


def said_as(param: click.Parameter, ctx: click.Context | None) -> str:
    """How the user gave ``param``: its environment variable if it came from there, else its flag
    (never the internal name: ``--ttl``, not ``--ttl-s``)."""
    if ctx is not None and ctx.get_parameter_source(param.name) == ParameterSource.ENVIRONMENT:
        return param.envvar
    return param.opts[0] if param.opts else param.name


def registry_choices() -> dict[str, tuple[str, ...]]:
    """The registries a setting's ``choices`` names."""
    return {"backends": tuple(BACKENDS), "servers": tuple(SERVERS), "liveness": LIVENESS}


def help_text(setting: Setting) -> str:
    """The setting's help with its registry lists filled in."""
    if "{" not in setting.help:
        return setting.help
    return setting.help.format(leases=", ".join(BUILTIN), nemesis=nemesis_help())


def _number(value: float) -> str:
    return f"{float(value):.6f}".rstrip("0").rstrip(".") or "0"


def setting_option(name: str, setting: Setting, default) -> click.Option:
    """The click option of one setting (its parameter name is the ``RunConfig`` field)."""
    kw: dict = {"default": default, "help": help_text(setting), "envvar": setting.env, "show_envvar": True}
    decls = [setting.flag]
    if setting.kind is bool:
        decls = [f"{setting.flag}/--no-{setting.flag[2:]}"]
    elif setting.choices:
        kw["type"] = click.Choice(list(registry_choices()[setting.choices]))
    elif setting.kind == "duration":
        kw["type"] = DURATION
        kw["default"] = None if default is None else f"{_number(default)}s"
    elif setting.kind in (int, float):
        kw["type"] = setting.kind
    return click.Option(decls + [name], **kw)


def setting_options() -> list[click.Option]:
    """One option per setting that has a flag, in ``RunConfig``'s order."""
    values = defaults()
    return [setting_option(name, s, values[name]) for name, s in settings().items() if s.flag]


def with_settings(command: click.Command) -> click.Command:
    """Put the setting options before ``command``'s own (hand-written) options."""
    command.params[:0] = setting_options()
    return command
