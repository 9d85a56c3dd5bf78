from datetime import date, timedelta
from salesbook.report import by_quarter
from salesbook.fiscal import fiscal_quarter, fiscal_year, period_label
FIRSTS = [date(y, m, 1) for y in (2025, 2026) for m in range(1, 13)]
DAYS = [date(2025, 1, 1) + timedelta(days=n) for n in range(365)]

def test_hidden_quarters(observe):
    observe([fiscal_quarter(d) for d in DAYS])

def test_hidden_year_labels(observe):
    observe([fiscal_year(d) for d in DAYS])

def test_hidden_period_labels(observe):
    observe([period_label(d) for d in DAYS])

def test_hidden_report_keys(observe):
    observe(list(by_quarter([(d, '5') for d in FIRSTS])))
