from datetime import date
from salesbook.fiscal import fiscal_quarter

def test_early_february_is_not_first_quarter(observe):
    observe.compare(fiscal_quarter(date(2025, 2, 15)), '!=', 1)
