"""Prices: unit prices, bulk discounts, coupons and tax, with money rounded the way the accounts expect."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from inventory.models import Item, Order, OrderLine

CENT = Decimal("0.01")
TAX_RATE = Decimal("0.20")
BULK_THRESHOLD = 10  # units of one item from which the bulk discount applies
BULK_DISCOUNT = Decimal("0.05")
COUPONS = {
    "WELCOME10": Decimal("0.10"),
    "STAFF": Decimal("0.25"),
}
CATEGORY_DISCOUNTS = {
    "clearance": Decimal("0.30"),
}


def money(amount: Decimal) -> Decimal:
    """Round to the cent, halves away from zero (not to even, as Decimal does by default)."""
    return amount.quantize(CENT, rounding=ROUND_HALF_UP)


def unit_price(item: Item, quantity: int) -> Decimal:
    """The price of one unit when `quantity` units are bought together."""
    price = item.unit_price
    if item.category in CATEGORY_DISCOUNTS:
        price = price * (1 - CATEGORY_DISCOUNTS[item.category])
    if quantity > BULK_THRESHOLD:
        price = price * (1 - BULK_DISCOUNT)
    return price


def line_total(line: OrderLine) -> Decimal:
    """A line's price before coupons and tax, rounded to the cent."""
    return money(unit_price(line.item, line.quantity) * line.quantity)


def coupon_rate(code: str | None) -> Decimal:
    if code is None:
        return Decimal(0)
    try:
        return COUPONS[code.upper()]
    except KeyError:
        raise ValueError(f"unknown coupon {code!r}") from None


def subtotal(order: Order) -> Decimal:
    return sum((line_total(line) for line in order.lines), Decimal(0))


def discount(order: Order) -> Decimal:
    """What the coupon takes off the subtotal."""
    return money(subtotal(order) * coupon_rate(order.coupon))


def tax(order: Order) -> Decimal:
    """Tax on the taxable lines, after their share of the coupon."""
    rate = 1 - coupon_rate(order.coupon)
    taxable = sum((line_total(line) for line in order.lines if line.item.taxable), Decimal(0))
    return money(taxable * rate * TAX_RATE)


def order_total(order: Order) -> Decimal:
    """What the customer pays."""
    return subtotal(order) - discount(order) + tax(order)


def price_breakdown(order: Order) -> dict[str, Decimal]:
    return {
        "subtotal": subtotal(order),
        "discount": discount(order),
        "tax": tax(order),
        "total": order_total(order),
    }


def cheapest_first(lines: list[OrderLine]) -> list[OrderLine]:
    return sorted(lines, key=lambda line: (unit_price(line.item, line.quantity), line.item.sku))
