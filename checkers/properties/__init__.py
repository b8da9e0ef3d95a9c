"""The checked properties, one module each, composed into the verdict.

Every property is a function with one signature,

    check(m: measure.Measured, found: Mapping[str, object]) -> result.Part

that reads the measured run `m` (the history's digest, and with an audit the store model's claims,
the join and the store clock) and returns its share of the result: its fields of `results.json`
(`result.Result` names them all), its failures (valid False), its doubts (valid "unknown"), the
notes it says when all is well, its certainty entries and any witness timeline. `found` holds the
fields of the properties before it (the diagnosis reads them); a property never writes another's
field. `verdict.check` runs `PROPERTIES` in order and merges the parts (`result.Result.merged`):
False beats "unknown" beats True; failures come first, in this order, then doubts.

Adding a property: one module here with its `check`, one line in `PROPERTIES`, its fields in
`result.Result` if it reports new ones, and its tests (see tests/checkers/test_properties.py).
"""
from __future__ import annotations

from . import (diagnosis, early_loss, evidence, fates, fault_doubts, foreign_releases,
               interruption, overlap, releases_found_nothing, stale_effects, token_reuse)

# The order is the order of the reasons (violations first, then doubts, each in this order).
PROPERTIES = (
    foreign_releases.check,        # no attempt removes another's claim
    token_reuse.check,             # holder tokens are fresh per attempt
    evidence.check,                # claims were seen; wins were claims
    fates.check,                   # every claim followed to its end
    fault_doubts.check,            # the faults acted as asked
    early_loss.check,              # the store kept claims until their deadline
    overlap.check,                 # overlap (and its causes) within max_overlap
    releases_found_nothing.check,  # releases that found nothing (reported)
    stale_effects.check,           # effects written without a live claim (reported)
    interruption.check,            # the run was not cut short
    diagnosis.check,               # why claims were lost, in words (last: reads the others)
)

__all__ = ["PROPERTIES"]
