"""The table of a matrix: one row per lease, one column per fault mix, each cell the verdict with
what decided it and links to the run's directory and its ``report.html``.

Written three ways from the same cells: Markdown (``results/matrix-<time>.md``, for a README or a
CI job summary), a self-contained HTML page (``results/matrix-<time>.html``, no external files)
and a rich table for the terminal. Links are relative to the file's own directory, so the
results directory can be moved or uploaded whole (a CI artifact) and its links still work.
"""
from __future__ import annotations

import html
import os
from dataclasses import dataclass
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from leasecheck.checkers.measures.hazards import MISSED
from leasecheck.harness.search.matrix import CRASHED, INCONCLUSIVE, INVALID, INVALID_STORE, NOT_RUN, VALID, Cell
from leasecheck.rundir import REPORT

REASON_CHARS = 120
_STYLE = {VALID: "green", INVALID: "bold red", INVALID_STORE: "magenta", INCONCLUSIVE: "yellow", CRASHED: "bold magenta", NOT_RUN: "dim"}


@dataclass(frozen=True)
class Header:
    """What a reader needs to repeat the matrix: the command, when, where."""
    command: str
    when: str        # "2026-12-01 12:30 UTC"
    machine: str     # "x86_64, 2 cores, Python 3.11.7"
    seed: int
    exit_code: int


def what(cell: Cell) -> str:
    """The few words after a verdict: the violations of an INVALID cell, the warning signs of a
    VALID one, the first doubt of an INCONCLUSIVE one."""
    n = cell.counts
    if cell.verdict == INVALID:
        found = [f"{n[k]} {label}" for k, label in (("foreign_releases", "foreign release(s)"),
                                                    ("token_reuse", "attempt(s) sharing a token"),
                                                    ("early_loss", "early loss(es)")) if n.get(k)]
        return ", ".join(found) or _short(cell.reason)
    if cell.verdict == INVALID_STORE:
        return f"the store broke the lease's promise: {n.get('early_loss', 0)} early loss(es)"
    if cell.verdict == VALID:
        missed = [MISSED[h][0] for h in n.get("hazards_missed") or [] if h in MISSED]
        missed = f"; but {', '.join(missed)}" if missed else ""
        return f"overlap {n.get('overlap', 0)}, {n.get('found_nothing', 0)} release(s) found nothing{missed}"
    if cell.verdict == NOT_RUN:
        return _short(cell.reason) if cell.reason else "the matrix stopped first"
    return _short(cell.reason)


def _short(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= REASON_CHARS else text[:REASON_CHARS - 1] + "…"


def _rel(path: Path, base: Path) -> str:
    return Path(os.path.relpath(Path(path).resolve(), Path(base).resolve())).as_posix()


def _grid(cells: list[Cell]) -> tuple[list[str], list[str], dict[tuple[str, str], Cell]]:
    leases = list(dict.fromkeys(c.lease for c in cells))
    mixes = list(dict.fromkeys(c.mix for c in cells))
    return leases, mixes, {(c.lease, c.mix): c for c in cells}


def _md_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;")


def markdown_table(cells: list[Cell], base: Path | None = None) -> str:
    """The Markdown table; with ``base`` (the directory the file goes to) each cell links to its
    run directory and report."""
    leases, mixes, at = _grid(cells)
    lines = ["| lease | " + " | ".join(f"`{m}`" for m in mixes) + " |",
             "|---|" + "---|" * len(mixes)]
    for lease in leases:
        row = []
        for mix in mixes:
            cell = at.get((lease, mix))
            if cell is None:
                row.append("")
                continue
            text = f"**{cell.verdict}**: {_md_escape(what(cell))}"
            if base is not None and cell.run_dir is not None:
                rel = _rel(cell.run_dir, base)
                text += f" ([run]({rel}/), [report]({rel}/{REPORT}))"
            row.append(text)
        lines.append(f"| `{lease}` | " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def exit_words(code: int) -> str:
    return {0: "0 (every cell VALID)", 1: "1 (at least one cell INVALID)",
            2: "2 (no cell INVALID, at least one not VALID)"}.get(code, str(code))


def markdown(cells: list[Cell], header: Header, base: Path) -> str:
    return (f"# leasecheck matrix, {header.when}\n\n"
            f"`{header.command}`\n\n"
            f"Seed {header.seed} in every cell; machine: {header.machine}. Exit code {exit_words(header.exit_code)}.\n\n"
            + markdown_table(cells, base))


_CSS = """body{font:14px system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse}th,td{border:1px solid #ccc;padding:.4em .6em;vertical-align:top;text-align:left}
th{background:#f4f4f4}code{font-size:13px}.v{font-weight:bold}.VALID{background:#e7f6e7}
.INVALID{background:#fde2e2}.STORE{background:#ece4f7;font-style:italic}.INCONCLUSIVE{background:#fff4d6}.CRASHED{background:#f3e1f7}
.NOT{color:#888}td small{display:block;margin-top:.3em}"""


def html_page(cells: list[Cell], header: Header, base: Path) -> str:
    """One self-contained page (inline style, no script, nothing fetched)."""
    leases, mixes, at = _grid(cells)
    e = html.escape
    rows = []
    for lease in leases:
        tds = []
        for mix in mixes:
            cell = at.get((lease, mix))
            if cell is None:
                tds.append("<td></td>")
                continue
            links = ""
            if cell.run_dir is not None:
                rel = e(_rel(cell.run_dir, base))
                links = f'<small><a href="{rel}/">run</a> · <a href="{rel}/{REPORT}">report</a></small>'
            tds.append(f'<td class="{_css_class(cell.verdict)}"><span class="v">{e(cell.verdict)}</span> '
                       f"{e(what(cell))}{links}</td>")
        rows.append(f"<tr><th><code>{e(lease)}</code></th>{''.join(tds)}</tr>")
    head = "".join(f"<th><code>{e(m)}</code></th>" for m in mixes)
    return ("<!doctype html>\n<html><head><meta charset=\"utf-8\">"
            f"<title>leasecheck matrix, {e(header.when)}</title><style>{_CSS}</style></head><body>\n"
            f"<h1>leasecheck matrix, {e(header.when)}</h1>\n<p><code>{e(header.command)}</code></p>\n"
            f"<p>Seed {header.seed} in every cell; machine: {e(header.machine)}. "
            f"Exit code {e(exit_words(header.exit_code))}.</p>\n"
            f"<table><tr><th>lease</th>{head}</tr>\n" + "\n".join(rows) + "\n</table>\n</body></html>\n")


def _css_class(verdict: str) -> str:
    return "STORE" if verdict == INVALID_STORE else verdict.split()[0]


def rich_table(cells: list[Cell]) -> Table:
    leases, mixes, at = _grid(cells)
    table = Table("lease", *mixes, show_lines=True)
    for lease in leases:
        row = []
        for mix in mixes:
            cell = at.get((lease, mix))
            row.append("" if cell is None else
                       f"[{_STYLE.get(cell.verdict, '')}]{cell.verdict}[/]\n{escape(what(cell))}")
        table.add_row(escape(lease), *row)
    return table


def write(cells: list[Cell], header: Header, results_dir: Path, stamp: str) -> tuple[Path, Path]:
    """``results_dir/matrix-<stamp>.md`` and ``.html``; returns both paths."""
    results_dir = Path(results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    md, page = results_dir / f"matrix-{stamp}.md", results_dir / f"matrix-{stamp}.html"
    md.write_text(markdown(cells, header, results_dir), encoding="utf-8")
    page.write_text(html_page(cells, header, results_dir), encoding="utf-8")
    return md, page
