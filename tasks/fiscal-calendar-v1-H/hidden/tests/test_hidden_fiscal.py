from datetime import date, timedelta
from grantdesk.report import by_quarter
from grantdesk.periods import fiscal_quarter, fiscal_year, period_label
FIRSTS = [date(y, m, 1) for y in (2025, 2026) for m in range(1, 13)]
DAYS = [date(2025, 1, 1) + timedelta(days=n) for n in range(365)]

def runs(values):
    """The list run-length encoded, losslessly: (index, value) where a run of equal values (same
    type, equal) starts."""
    out = []
    for i, v in enumerate(values):
        if not out or type(v) is not type(out[-1][1]) or v != out[-1][1]:
            out.append((i, v))
    return out

def test_hidden_quarters(observe):
    observe(runs([fiscal_quarter(d) for d in DAYS]))

def test_hidden_year_labels(observe):
    observe(runs([fiscal_year(d) for d in DAYS]))

def test_hidden_period_labels(observe):
    observe(runs([period_label(d) for d in DAYS]))

def test_hidden_report_keys(observe):
    observe(list(by_quarter([(d, '5') for d in FIRSTS])))
