from datetime import date
from decimal import Decimal
from salesbook.report import by_quarter
from salesbook.fiscal import fiscal_quarter

def test_quarters_are_one_to_four(observe):
    observe.compare({fiscal_quarter(date(2024, m, 1)) for m in range(1, 13)}, '==', {1, 2, 3, 4})

def test_each_quarter_has_three_months(observe):
    quarters = [fiscal_quarter(date(2024, m, 1)) for m in range(1, 13)]
    observe.truth(all((quarters.count(q) == 3 for q in (1, 2, 3, 4))))

def test_rows_in_the_same_day_are_summed(observe):
    totals = by_quarter([(date(2024, 8, 8), '1.50'), (date(2024, 8, 8), '2.25')])
    observe.compare(list(totals.values()), '==', [Decimal('3.75')])
