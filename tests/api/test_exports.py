"""What ``import leasecheck`` offers, pinned: the API and its types, loaded on first use."""
import subprocess
import sys

import leasecheck

EXPORTS = {"run", "check", "hunt", "shrink", "matrix", "Result", "Overlap", "Tally", "Outcome", "Shrunk",
           "Matrix", "Cell", "LeasecheckError", "UsageError", "StoreError", "CheckError"}


def test_the_public_names():
    assert set(leasecheck.__all__) == EXPORTS
    for name in EXPORTS:
        assert getattr(leasecheck, name) is not None
    assert issubclass(leasecheck.UsageError, leasecheck.LeasecheckError)


def test_importing_leasecheck_stays_light():
    """A worker process (and every pytest session, through the fixture) imports ``leasecheck``
    first: that alone must not load the harness, the checker or redis."""
    code = ("import sys, leasecheck; heavy = [m for m in ('redis', 'leasecheck.harness', 'leasecheck.checkers', "
            "'rich', 'jinja2') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_an_unknown_name_is_an_attribute_error():
    try:
        leasecheck.nope
    except AttributeError as e:
        assert "nope" in str(e)
    else:
        raise AssertionError("leasecheck.nope resolved")


def test_result_round_trips_results_json(tmp_path):
    data = {"valid": False, "reasons": ["2 foreign release(s)"], "foreign_releases": 2,
            "overlap": {"count": 3, "rate": 0.25, "max_concurrency": 2}, "claims_seen": {"count": 9},
            "early_loss": {"count": 1}, "token_reuse": {"attempts": 0}, "releases_found_nothing": 4, "ops": 50,
            "witness": {"markdown": "## Foreign release on k"}}
    r = leasecheck.Result.from_json(data, tmp_path)
    assert (r.verdict, r.exit_code, r.foreign_releases, r.overlap.rate, r.claims_seen, r.early_loss) == \
        ("INVALID", 1, 2, 0.25, 9, 1)
    assert r.reason == "2 foreign release(s)" and r.witness.startswith("## Foreign")
    r.save()
    back = leasecheck.Result.load(tmp_path)
    assert back.to_json() == data and back == r
    assert "\n" not in repr(r) and repr(r).startswith("<Result valid=False: 2 foreign release(s)")
    assert leasecheck.Result.from_json({"valid": "unknown"}).verdict == "INCONCLUSIVE"
    assert leasecheck.Result.from_json({"valid": "unknown"}).exit_code == 2
