from datetime import date

from grantdesk.report import by_quarter
from grantdesk.periods import fiscal_quarter, fiscal_year, period_label


def test_hidden_first_day_opens_q1():
    assert fiscal_quarter(date(2025, 3, 1)) == 1


def test_hidden_day_before_closes_q4():
    assert fiscal_quarter(date(2025, 2, 28)) == 4


def test_hidden_year_label():
    assert fiscal_year(date(2025, 3, 20)) == 2025
    assert fiscal_year(date(2025, 2, 28)) == 2024


def test_hidden_period_label():
    assert period_label(date(2025, 3, 20)) == "FY2025-Q1"


def test_hidden_report_keys():
    totals = by_quarter([(date(2025, 3, 20), "5")])
    assert list(totals) == [(2025, 1)]
