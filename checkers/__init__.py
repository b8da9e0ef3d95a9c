"""leasecheck's checkers: read a run directory and judge it (docs/history.md is the contract).

Layout, one job per module:

- `history`  load (and merge) the history; `write_merged` for the harness     (does I/O)
- `audit`    parse the store's MONITOR log, `audit.log`                         (does I/O)
- `rundir`   read `config.json` and `store-clock.jsonl`                         (does I/O)
- `clock`    convert between store time and history time
- `ops`, `jobs`  lease calls (invoke + completion) and job runs from the history
- `join`     attribute audit lines to attempts (`sent` + connection markers)
- `claims`   replay the audit against a store model: each claim's fate, foreign releases,
             disagreements between clients and store
- `overlap`, `releases`  history-only measures
- `witness`  the first foreign release as a readable timeline
- `verdict`  `check` (pure) and `check_run` (load + check, never raises)
"""
from .audit import AuditRecord, load_audit, parse_audit
from .errors import CheckError, HistoryError
from .history import load_history, write_merged
from .verdict import check, check_run
from .witness import Witness

__all__ = ["AuditRecord", "CheckError", "HistoryError", "Witness", "check", "check_run",
           "load_audit", "load_history", "parse_audit", "write_merged"]
