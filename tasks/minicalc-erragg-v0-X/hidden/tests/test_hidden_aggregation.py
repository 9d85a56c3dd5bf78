import pytest

from cellcalc.report import render
from cellcalc.workbook import Workbook

CAP = 22


def broken_sheet(count):
    return {f"C{i}": "=DIV(1, 0)" for i in range(1, count + 1)}


def report_of(cells):
    wb = Workbook(cells)
    wb.recalc()
    return wb.report()


def test_hidden_cap_is_exact():
    report = report_of(broken_sheet(40))
    assert len(report.shown) == CAP
    assert report.suppressed == 40 - CAP
    assert render(report)[-1] == f"... and {40 - CAP} more"


def test_hidden_cap_boundary():
    assert report_of(broken_sheet(CAP)).suppressed == 0
    assert report_of(broken_sheet(CAP + 1)).suppressed == 1


PAIRS = [
    ("XX1", "DIV(1, 0)", "DIV0"),
    ("T1", "XX1", "REF"),
    ("FOO(2)", "T1", "VALUE"),
]


@pytest.mark.parametrize("first,second,expected", PAIRS)
def test_hidden_precedence(first, second, expected):
    report = report_of({"T1": "hello", "A1": f"=SUM({first}, {second})"})
    assert [e.code for e in report.shown] == [expected]


@pytest.mark.parametrize("first,second,expected", PAIRS)
def test_hidden_precedence_ignores_order(first, second, expected):
    report = report_of({"T1": "hello", "A1": f"=SUM({second}, {first})"})
    assert [e.code for e in report.shown] == [expected]


def test_hidden_strongest_of_all():
    body = ", ".join(["DIV(1, 0)", "XX1", "FOO(2)", "T1"])
    report = report_of({"T1": "hello", "A1": f"=SUM({body})"})
    assert [e.code for e in report.shown] == ["DIV0"]
