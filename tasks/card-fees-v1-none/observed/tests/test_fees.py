from datetime import date
from decimal import Decimal
import pytest
from cardtariff.fees import fee, fee_breakdown

def test_2022_payment(observe):
    observe.compare(fee(Decimal('100.00'), date(2022, 5, 3)), '==', Decimal('2.40'))

def test_before_any_tariff(observe):
    with observe.raises():
        fee(Decimal('100.00'), date(2020, 1, 1))

def test_breakdown_matches_fee(observe):
    day = date(2023, 2, 1)
    observe.compare(fee_breakdown(Decimal('80.00'), day)[1], '==', fee(Decimal('80.00'), day))
