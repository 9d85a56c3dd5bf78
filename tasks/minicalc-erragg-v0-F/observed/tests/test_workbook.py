from cellcalc.report import render
from cellcalc.workbook import Workbook

def test_numbers_and_formulas(observe):
    wb = Workbook({'A1': 2, 'A2': 5, 'A3': '=SUM(A1, A2, 1)', 'A4': '=DIV(A3, 4)'})
    values = wb.recalc()
    observe.compare(values['A3'], '==', 8.0)
    observe.compare(values['A4'], '==', 2.0)
    observe.compare(wb.report().shown, '==', [])

def test_nested_calls(observe):
    wb = Workbook({'A1': 3, 'B1': '=MAX(MUL(A1, 2), SUM(1, 1))'})
    observe.compare(wb.recalc()['B1'], '==', 6.0)

def test_division_by_zero_is_reported(observe):
    wb = Workbook({'A1': '=DIV(1, 0)'})
    wb.recalc()
    observe.compare([e.code for e in wb.report().shown], '==', ['DIV0'])

def test_unknown_reference_is_reported(observe):
    wb = Workbook({'A1': '=SUM(XX1, 1)'})
    wb.recalc()
    observe.compare(render(wb.report()), '==', ['A1: #REF no cell XX1'])

def test_text_in_arithmetic(observe):
    wb = Workbook({'T1': 'hello', 'A1': '=SUM(T1, 1)'})
    wb.recalc()
    observe.compare([e.code for e in wb.report().shown], '==', ['VALUE'])

def test_a_few_errors_are_all_shown(observe):
    wb = Workbook({'A1': '=DIV(1, 0)', 'A2': '=FOO(2)', 'A3': 4})
    wb.recalc()
    report = wb.report()
    observe.compare([e.cell for e in report.shown], '==', ['A1', 'A2'])
    observe.compare(report.suppressed, '==', 0)
