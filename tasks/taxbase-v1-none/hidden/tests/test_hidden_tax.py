from decimal import Decimal

from innfolio.model import Folio
from innfolio.levy import folio_tax, total_due


def _make(goods, extra):
    folio = Folio()
    folio.add("item", goods)
    folio.extras = Decimal(extra)
    return folio


def test_hidden_published_rate():
    assert folio_tax(_make("100.00", "0.00")) == Decimal("8.80")


def test_hidden_base_rule():
    assert folio_tax(_make("124.95", "10.82")) == Decimal("11.94")


def test_hidden_total_due():
    assert total_due(_make("124.95", "10.82")) == Decimal("135.77") + Decimal("11.94")
