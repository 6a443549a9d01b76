from decimal import Decimal

import pytest

from inventory.models import Item, Order, OrderLine
from inventory.pricing import coupon_rate, line_total, money, order_total, tax, unit_price

PEN = Item("PEN1", "Blue pen", Decimal("1.50"))
BOOK = Item("BOOK7", "Notebook", Decimal("4.00"), taxable=False)
LAMP = Item("LAMP2", "Desk lamp", Decimal("30.00"), category="clearance")


def test_money_rounds_halves_up():
    assert money(Decimal("0.125")) == Decimal("0.13")
    assert money(Decimal("2.675")) == Decimal("2.68")


def test_small_quantities_pay_the_unit_price():
    assert unit_price(PEN, 3) == Decimal("1.50")
    assert line_total(OrderLine(PEN, 3)) == Decimal("4.50")


def test_bulk_discount_above_the_threshold():
    assert line_total(OrderLine(PEN, 20)) == Decimal("28.50")


def test_clearance_items_are_cheaper():
    assert unit_price(LAMP, 1) == Decimal("21.00")


def test_coupons():
    assert coupon_rate("welcome10") == Decimal("0.10")
    with pytest.raises(ValueError, match="unknown coupon"):
        coupon_rate("FREE")


def test_tax_only_on_taxable_lines():
    order = Order("A1", "ann")
    order.add(PEN, 2)
    order.add(BOOK, 1)
    assert tax(order) == Decimal("0.60")
    assert order_total(order) == Decimal("7.60")
