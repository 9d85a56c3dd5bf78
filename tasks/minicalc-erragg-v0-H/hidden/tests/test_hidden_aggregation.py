import pytest
from cellcalc.report import render
from cellcalc.workbook import Workbook

def broken_sheet(count):
    return {f'C{i}': '=DIV(1, 0)' for i in range(1, count + 1)}

def report_of(cells):
    wb = Workbook(cells)
    wb.recalc()
    return wb.report()

def test_hidden_cap_is_exact(observe):
    report = report_of(broken_sheet(40))
    observe(len(report.shown))
    observe(report.suppressed)
    observe(render(report)[-1])

def test_hidden_cap_boundary(observe):
    observe([report_of(broken_sheet(n)).suppressed for n in range(1, 40, 9)])
PAIRS = [('DIV(1, 0)', 'FOO(2)'), ('DIV(1, 0)', 'T1'), ('DIV(1, 0)', 'XX1'), ('FOO(2)', 'T1'), ('FOO(2)', 'XX1'), ('T1', 'XX1')]

@pytest.mark.parametrize('first,second', PAIRS)
def test_hidden_precedence(first, second, observe):
    report = report_of({'T1': 'hello', 'A1': f'=SUM({first}, {second})'})
    observe([e.code for e in report.shown])

@pytest.mark.parametrize('first,second', PAIRS)
def test_hidden_precedence_ignores_order(first, second, observe):
    report = report_of({'T1': 'hello', 'A1': f'=SUM({second}, {first})'})
    observe([e.code for e in report.shown])

def test_hidden_strongest_of_all(observe):
    body = ', '.join(['DIV(1, 0)', 'FOO(2)', 'T1', 'XX1'])
    report = report_of({'T1': 'hello', 'A1': f'=SUM({body})'})
    observe([e.code for e in report.shown])
