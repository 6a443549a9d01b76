from decimal import Decimal

from inventory.models import Item, Order
from inventory.report import invoice_lines, render_invoice, summary

PEN = Item("PEN1", "Blue pen", Decimal("1.50"))
MUG = Item("MUG3", "Mug", Decimal("8.00"))


def bulk_order() -> Order:
    order = Order("B7", "bob")
    order.add(PEN, 10)  # the bulk discount applies from 10 units
    order.add(MUG, 1)
    return order


def test_invoice_lines_show_the_discounted_unit_price():
    rows = invoice_lines(bulk_order())
    assert rows[0] == ("PEN1", "Blue pen", "10", "1.42", "14.25")
    assert rows[1] == ("MUG3", "Mug", "1", "8.00", "8.00")


def test_invoice_ends_with_the_totals():
    text = render_invoice(bulk_order())
    assert text.splitlines()[-1] == "     Total: 26.70"


def test_summary_counts_units_and_customers():
    other = Order("C2", "cy")
    other.add(MUG, 2)
    data = summary([bulk_order(), other])
    assert data["units"] == 13
    assert data["best_sellers"][0] == ("PEN1", 10)
    assert data["top_customers"][0][0] == "bob"
