"""The project's results.json in the independent checker's shape (`checker.check`), to compare the
two: a plain reading of the fields, nothing of leasecheck imported."""
from __future__ import annotations


def project_counts(res: dict, config: dict) -> dict:
    common = {"overlap": res["overlap"]["count"], "found_nothing": res["releases_found_nothing"]}
    if config.get("topology") == "replicated":
        fates = {k: v for k, v in res["claims"].items() if v}
        return {"foreign": [(f["attempt"], f["victim"], f["node"], f["line"], f["victim_job_running"])
                            for f in res["foreign_releases_first"]],
                "claims": sum(fates.values()), "fates": fates,
                "nodes": {k: (v["claims"], v["copies"]) for k, v in res["audit"]["nodes"].items() if v["recorded"]},
                "lost_in_failover": res["claims"]["lost_in_failover"],
                "early_loss_failover": res["early_loss"]["by_cause"]["failover"],
                "split_brain": res["split_brain"]["count"], "off_primary": res["split_brain"]["off_primary"],
                **common}
    if config.get("store_nodes"):
        me = res["mutual_exclusion"]
        return {"foreign": res["foreign_releases"], "foreign_per_node": me["foreign_releases_per_node"],
                "claims_per_node": me["claims_per_node"], "holds": me["holds"], "violations": me["violations"],
                **common}
    seen = res["claims_seen"] or {"count": None, "keys": None}
    return {"foreign": [(f["attempt"], f["victim"], f["line"], f["victim_job_running"])
                        for f in res["foreign_releases_first"]],
            "claims": seen["count"], "fates": {k: v for k, v in (res["claims"] or {}).items() if v},
            "objects": seen["keys"], **common}
