from datetime import date

from salesbook.report import by_quarter
from salesbook.fiscal import fiscal_quarter, fiscal_year, period_label


def test_hidden_first_day_opens_q1():
    assert fiscal_quarter(date(2025, 11, 1)) == 1


def test_hidden_day_before_closes_q4():
    assert fiscal_quarter(date(2025, 10, 31)) == 4


def test_hidden_year_label():
    assert fiscal_year(date(2025, 11, 20)) == 2026
    assert fiscal_year(date(2025, 10, 31)) == 2025


def test_hidden_period_label():
    assert period_label(date(2025, 11, 20)) == "FY2026-Q1"


def test_hidden_report_keys():
    totals = by_quarter([(date(2025, 11, 20), "5")])
    assert list(totals) == [(2026, 1)]
