from datetime import date
from salesbook.fiscal import fiscal_quarter

def test_mid_january_is_not_first_quarter(observe):
    observe.compare(fiscal_quarter(date(2025, 1, 15)), '!=', 1)
