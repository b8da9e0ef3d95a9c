"""leasecheck's checkers: read a run directory and judge it (docs/history.md is the contract).

Layout, one job per module:

- `history`  read (and merge) the history as a stream; `write_merged` for the harness (does I/O)
- `audit`    parse the store's MONITOR log, `audit.log`, as a stream             (does I/O)
- `rundir`   read `config.json` and `store-clock.jsonl`                         (does I/O)
- `clock`    convert between store time and history time
- `ops`, `jobs`, `faults`  lease calls (invoke + completion), job runs, faults from the history
- `digest`   one pass over the history keeping only what the checkers need
- `join`     attribute audit lines to attempts (`sent` + connection markers)
- `store_model`  how Redis commands change keys and expiries (no attempts, no fates)
- `claims`   what those changes mean for claims: each claim's fate, foreign releases, stale
             effects; `Replay` wires the store model, the claims and the cross-checks
- `crosscheck`  each call's reported result against what its commands did (disagreements,
             acquires won without a claim, what a release that found nothing met)
- `engine`   read history and audit side by side through the join and the model
- `measure`  run the engine once: what every property reads (`Measured`)
- `overlap`, `causes`, `releases`, `effects`, `tokens`, `history_only`  the measures
- `properties/`  the checked properties, one module each, found by the registry (`PROPERTIES`)
- `result`   the one result schema (`Result`) and a property's share of it (`Part`)
- `interruption`  was the run cut short (never VALID then)?
- `fault_windows`, `fault_report`  what the nemesis did, on the time axis and in words
- `diagnosis`  why claims were lost, in plain words, from the measured causes
- `witness`  the first foreign release as a readable timeline
- `verdict`  `check` (pure: measure, judge, merge) and `check_run` (read + check, never raises)

The history and the audit are streamed: memory holds the claims, the job runs and the lease
calls in flight, not the files.
"""
from leasecheck.checkers.read.audit import AuditRecord, load_audit, parse_audit
from leasecheck.checkers.errors import CheckError, HistoryError
from leasecheck.checkers.read.history import load_history, write_merged
from leasecheck.checkers.verdict import check, check_run
from leasecheck.checkers.present.witness import Witness

__all__ = ["AuditRecord", "CheckError", "HistoryError", "Witness", "check", "check_run",
           "load_audit", "load_history", "parse_audit", "write_merged"]
