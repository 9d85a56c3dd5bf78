"""Analysis: tables, statistics, plots, the HTML report and FINDINGS.md."""
