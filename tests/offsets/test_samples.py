"""The sample shipped in the package is exactly what kgtool/offsets/samples.py writes, and the
pure model finds in it exactly one finding per rule (the CLI tests assert the same with Spark)."""

from __future__ import annotations

from pathlib import Path

from kgtool.data import sample_path
from kgtool.offsets.audit import audit_entries
from kgtool.offsets.decode import entries_from_file
from kgtool.offsets.samples import sample_scripts, write_sample
from kgtool.offsets.tables import LOG_RULES
from kgtool.spark.files import resolve_inputs


def test_shipped_sample_is_up_to_date(tmp_path):
    written = write_sample(str(tmp_path))
    shipped = Path(str(sample_path("sample_offsets")))
    for p in written:
        rel = Path(p).relative_to(tmp_path)
        assert (shipped / rel).read_bytes() == Path(p).read_bytes(), (
            f"{rel} is stale: run python -m kgtool.offsets.samples"
        )


def test_sample_has_each_rule_once_and_the_lookalikes_are_quiet():
    files = resolve_inputs([str(sample_path("sample_offsets"))])
    r = audit_entries([e for f in files for e in entries_from_file(f.path, log_partition=f.log_partition)], files=files)
    assert sorted(f["rule"] for f in r.tables["findings"]) == sorted(LOG_RULES)  # no data partitions: no lag
    quiet = {"billing-reset", "inventory-coop", "payments-retry", "ledger-ok", "nightly-job", "events-stream",
             "clicks-static", "search-quick"}
    assert not quiet & {f["group"] for f in r.tables["findings"]}
    assert {c["group"] for c in r.tables["commits"]} | {g["group"] for g in r.tables["generations"]} >= quiet
    assert {s.log_partition for s in sample_scripts()} == {7, 23}
