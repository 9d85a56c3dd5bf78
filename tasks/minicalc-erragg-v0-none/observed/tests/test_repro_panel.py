from cellcalc.workbook import Workbook

def broken_sheet(count):
    return {f'C{i}': '=DIV(1, 0)' for i in range(1, count + 1)}

def test_error_panel_is_capped(observe):
    wb = Workbook(broken_sheet(40))
    wb.recalc()
    report = wb.report()
    observe.compare(report.suppressed, '>', 0)
    observe.compare(len(report.shown) + report.suppressed, '==', 40)

def test_each_cell_listed_once(observe):
    wb = Workbook({'A1': '=SUM(DIV(1, 0), XX1)'})
    wb.recalc()
    observe.compare([e.cell for e in wb.report().shown], '==', ['A1'])
