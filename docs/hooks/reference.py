"""MkDocs hook: the reference pages, generated from the code's own registries at build time.

A reference page holds a placeholder line such as ``<!-- reference:leases -->``; ``on_page_markdown``
replaces it with a table built by importing ``leasecheck`` — the lease registry
(``leasecheck.workloads.leases.BUILTIN``), the fault registry (``leasecheck.harness.faults.FAULTS``),
the click commands (``leasecheck.harness.cli.cli``), the result schema (``leasecheck.checkers.result.Result``
and ``leasecheck.checkers.properties.PROPERTIES``) and the exit codes (``EXIT_*`` in
``leasecheck.harness.cli``). Nothing here is copied by hand, so the pages cannot drift from the
code; ``tests/docs/test_site.py`` checks them against the registries.

The functions ``leases()``, ``faults()``, ``options()``, ``results_fields()`` and ``exit_codes()``
return Markdown and can be called without MkDocs.
"""
from __future__ import annotations

import ast
import dataclasses
import importlib
import importlib.util
import inspect
import re

PLACEHOLDER = re.compile(r"^<!-- reference:([a-z_-]+) -->$", re.MULTILINE)


def _cell(text) -> str:
    """One Markdown table cell: no newlines, no bare pipes."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _code(text) -> str:
    return f"`{text}`" if text not in (None, "") else "—"


def _first_paragraph(doc: str | None) -> str:
    return (doc or "").strip().split("\n\n")[0]


def _module_doc(module_name: str) -> str:
    """A module's docstring, read from its source (an optional dependency need not be installed)."""
    spec = importlib.util.find_spec(module_name)
    if spec is None or not spec.origin:
        return ""
    with open(spec.origin, encoding="utf-8") as f:
        return ast.get_docstring(ast.parse(f.read())) or ""


def _rst_to_md(text: str) -> str:
    return text.replace("``", "`")


# -- leases ---------------------------------------------------------------------------------------

def lease_rows() -> list[dict]:
    from leasecheck.workloads.leases import BUILTIN
    rows = []
    for name, target in BUILTIN.items():
        if target.startswith("exec:"):     # a child process per slot: its script's opening comment
            rows.append(_exec_row(name, target))
            continue
        module_name, _, cls_name = target.partition(":")
        cls, note = None, ""
        try:
            cls = getattr(importlib.import_module(module_name), cls_name)
        except ImportError as e:   # a library lease without its optional package
            note = f"(not importable here: {e})"
        doc = _first_paragraph(getattr(cls, "__doc__", None) if cls is not None and cls.__doc__ else None) \
            or _first_paragraph(_module_doc(module_name))
        has = [] if cls is None else [w for w, ok in (
            ("renew", callable(getattr(cls, "renew", None))),
            ("check_ttl", callable(getattr(cls, "check_ttl", None))),
            ("check_server", callable(getattr(cls, "check_server", None))),
        ) if ok]
        if cls is not None and inspect.iscoroutinefunction(getattr(cls, "acquire", None)):
            has.insert(0, "async")
        if cls is not None and getattr(cls, "connect", None) == "url":
            has.insert(0, 'connect = "url"')
        rows.append({"name": name, "target": target, "doc": _rst_to_md(doc) + (" " + note if note else ""),
                     "nodes": getattr(cls, "nodes", None) or "one", "has": has})
    return rows


def _exec_row(name: str, target: str) -> dict:
    """A built-in ``exec:`` lease: what its script's opening ``//`` comment says, its first paragraph."""
    from leasecheck.workloads.leases import ROOT
    script = next((w for w in target[5:].split()[1:] if not w.startswith("-")), "")
    path = ROOT / script
    lines = []
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("//"):
                lines.append(line[2:].strip())
            elif lines:
                break
    doc = " ".join(_first_paragraph("\n".join(lines)).split())
    renews = path.is_file() and "renew: true" in path.read_text(encoding="utf-8")
    return {"name": name, "target": target, "doc": doc, "nodes": "one",
            "has": ["exec: a child process per slot"] + (["renew"] if renews else [])}


def leases() -> str:
    from leasecheck.harness.search.matrix import DEFAULT_LEASES
    out = ["| `--lease` | class | store nodes | optional methods | in the matrix by default | what it is |",
           "|---|---|---|---|---|---|"]
    for r in lease_rows():
        out.append(f"| `{r['name']}` | `{r['target']}` | {r['nodes']} | "
                   f"{', '.join(f'`{h}`' for h in r['has']) or '—'} | "
                   f"{'yes' if r['name'] in DEFAULT_LEASES else 'no'} | {_cell(r['doc'])} |")
    return "\n".join(out)


# -- faults ---------------------------------------------------------------------------------------

def faults() -> str:
    from leasecheck.harness.faults import FAULTS
    out = ["| fault | what it does | targets (default first) | options | needs the proxy | acts on a store the harness started |",
           "|---|---|---|---|---|---|"]
    for f in FAULTS.values():
        targets = [f.default_target] + [t for t in f.targets if t != f.default_target]
        node = f" (a node, e.g. `node2`, acts as `{f.node_target}` on that node)" if f.node_target else ""
        store = (", ".join(f"`{t}`" for t in f.store_targets) + (f": {f.acts}" if f.acts else "")) \
            if f.store_targets else "—"
        out.append(f"| `{f.name}` | {_cell(f.summary)} | {', '.join(f'`{t}`' for t in targets if t)}{node} | "
                   f"{', '.join(f'`{o}`' for o in f.options) or '—'} | {'yes' if f.needs_proxy else 'no'} | "
                   f"{_cell(store)} |")
    out += ["", "Scenario event keys beyond `at`, `fault`, `target` and `duration`:", "",
            "| fault | key | kind | choices | meaning |", "|---|---|---|---|---|"]
    for f in FAULTS.values():
        for p in f.params:
            out.append(f"| `{f.name}` | `{p.key}` | {p.kind} | "
                       f"{', '.join(f'`{c}`' for c in p.choices) or '—'} | {_cell(p.help)} |")
    return "\n".join(out)


# -- command-line options -------------------------------------------------------------------------

def commands() -> list[tuple[str, object]]:
    """Every leasecheck command as (its words, the click command), subcommands of groups too."""
    import click
    from leasecheck.harness.cli import cli
    found = []

    def walk(group, prefix):
        for name, cmd in group.commands.items():
            words = f"{prefix} {name}".strip()
            if isinstance(cmd, click.Group):
                walk(cmd, words)
            else:
                found.append((words, cmd))
    walk(cli, "")
    return found


def _default(p) -> str:
    import click
    if isinstance(p, click.Argument):
        return "required" if p.required else "—"
    d = p.default
    if callable(d) or d is None or d == () or (getattr(p, "is_flag", False) and d is False and not p.secondary_opts):
        return "—"
    if isinstance(d, bool) and p.secondary_opts:
        return _code(p.opts[0] if d else p.secondary_opts[0])
    return _code(d)


def options_of(cmd) -> list:
    import click
    return [p for p in cmd.params if isinstance(p, (click.Option, click.Argument))]


def options() -> str:
    import click
    out = []
    for words, cmd in commands():
        out += [f"## `leasecheck {words}`", "", _cell(cmd.help or ""), ""]
        params = options_of(cmd)
        if not params:
            out += ["No options.", ""]
            continue
        out += ["| option | value | default | environment variable | meaning |", "|---|---|---|---|---|"]
        for p in params:
            if isinstance(p, click.Argument):
                flag = f"`{p.human_readable_name}`" + (" ..." if p.nargs == -1 else "")
                value = p.type.name
            else:
                flag = " / ".join(f"`{o}`" for o in p.opts + p.secondary_opts)
                value = "flag" if p.is_flag else p.type.name + (" (repeatable)" if p.multiple else "")
                if isinstance(p.type, click.Choice):
                    value = " \\| ".join(f"`{c}`" for c in p.type.choices)
            envvar = _code(p.envvar) if getattr(p, "envvar", None) else "—"
            out.append(f"| {flag} | {value} | {_default(p)} | {envvar} | {_cell(getattr(p, 'help', None) or '')} |")
        out.append("")
    return "\n".join(out)


# -- results.json ---------------------------------------------------------------------------------

def results_fields() -> str:
    import json
    from leasecheck.checkers.properties import PROPERTIES, name
    from leasecheck.checkers.result import OMITTED, Result
    head = ("schema_version", "valid", "reasons")
    said = {"schema_version": "the version of this schema",
            "valid": "the verdict: `true`, `false` or `\"unknown\"`",
            "reasons": "why: the failures, then the doubts, in property order (or, when valid, what was checked)"}
    out = ["The verdict comes first:", "", "| field | what it is |", "|---|---|"]
    out += [f"| `{f}` | {said[f]} |" for f in head]
    out += ["", "Then the fields each checked property owns, in property order (the value in brackets is the "
            "field's value when the run could not be checked; *left out*: the field is absent then):", "",
            "| property | its fields | what it checks |", "|---|---|---|"]
    for p in PROPERTIES:
        owned = ", ".join(f"`{field}` ({'left out' if value is OMITTED else _code(json.dumps(value))})"
                          for field, value in p.FIELDS.items())
        out.append(f"| `{name(p)}` | {_cell(owned)} | {_cell(_rst_to_md(_first_paragraph(p.__doc__)))} |")
    tail = [f.name for f in dataclasses.fields(Result) if f.name not in head and f.name != "properties"]
    out += ["", "Then what was measured of the run itself: " + ", ".join(f"`{f}`" for f in tail) + "."]
    return "\n".join(out)


# -- exit codes -----------------------------------------------------------------------------------

EXIT_MEANING = {
    "EXIT_VALID": "valid: every checked property held",
    "EXIT_INVALID": "invalid: a violation was proven",
    "EXIT_UNKNOWN": "unknown (inconclusive): the run could not earn a verdict, and says why",
    "EXIT_USAGE": "bad input: one line naming the fix, before anything starts",
    "EXIT_CRASH": "the harness itself failed",
}


def exit_codes() -> str:
    from leasecheck.harness import cli
    names = sorted((n for n in vars(cli) if n.startswith("EXIT_")), key=lambda n: getattr(cli, n))
    missing = [n for n in names if n not in EXIT_MEANING]
    if missing:
        raise RuntimeError(f"docs/hooks/reference.py: describe the exit code(s) {', '.join(missing)}")
    out = ["| exit code | constant | meaning |", "|---|---|---|"]
    out += [f"| **{getattr(cli, n)}** | `{n}` | {EXIT_MEANING[n]} |" for n in names]
    return "\n".join(out)


GENERATORS = {"leases": leases, "faults": faults, "options": options, "results": results_fields,
              "exit-codes": exit_codes}


def render(markdown: str) -> str:
    def one(m: re.Match) -> str:
        kind = m.group(1)
        if kind not in GENERATORS:
            raise ValueError(f"unknown reference placeholder {kind!r}; known: {', '.join(GENERATORS)}")
        return GENERATORS[kind]()
    return PLACEHOLDER.sub(one, markdown)


def on_page_markdown(markdown, page, config, files):   # the MkDocs hook
    return render(markdown)
