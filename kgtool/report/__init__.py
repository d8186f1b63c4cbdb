"""``spark-audit --report FILE.html``: one self-contained page picturing every group.

:mod:`kgtool.report.data` reads the audit's tables (Parquet or JSON Lines) with pyarrow on the
driver into a compact model, one overview row per group and the detail of the groups with
findings or rebalances, each series reduced to a bounded number of points;
:mod:`kgtool.report.page` turns that model into the HTML page, with the page's script and style
(package data under ``kgtool/report/assets/``) inlined, so that it opens offline.
"""
