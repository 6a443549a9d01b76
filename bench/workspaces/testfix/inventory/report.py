"""Order reports: the lines a customer sees on an invoice, and a summary across many orders."""

from __future__ import annotations

from collections import Counter
from decimal import Decimal

from inventory.models import Order
from inventory.pricing import line_total, order_total, price_breakdown, unit_price

COLUMNS = ("SKU", "Item", "Qty", "Unit", "Total")


def format_money(amount: Decimal) -> str:
    return f"{amount:,.2f}"


def invoice_lines(order: Order) -> list[tuple[str, str, str, str, str]]:
    """One row per order line, in the order they were added, with prices as text."""
    rows = []
    for line in order.lines:
        rows.append((
            line.item.sku,
            line.item.name,
            str(line.quantity),
            format_money(unit_price(line.item, line.quantity)),
            format_money(line_total(line)),
        ))
    return rows


def render_invoice(order: Order) -> str:
    """The invoice as fixed-width text, its totals at the bottom."""
    rows = [COLUMNS, *invoice_lines(order)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    text = []
    for row in rows:
        cells = [cell.ljust(width) if i < 2 else cell.rjust(width) for i, (cell, width) in enumerate(zip(row, widths))]
        text.append("  ".join(cells).rstrip())
    text.append("")
    for name, amount in price_breakdown(order).items():
        text.append(f"{name.capitalize():>10}: {format_money(amount)}")
    return "\n".join(text)


def summary(orders: list[Order]) -> dict:
    """Totals across orders: revenue, units, the best-selling items and the biggest customers."""
    revenue = sum((order_total(order) for order in orders), Decimal(0))
    units: Counter[str] = Counter()
    spend: Counter[str] = Counter()
    for order in orders:
        for line in order.lines:
            units[line.item.sku] += line.quantity
        spend[order.customer] += order_total(order)
    return {
        "orders": len(orders),
        "revenue": revenue,
        "units": sum(units.values()),
        "best_sellers": units.most_common(3),
        "top_customers": spend.most_common(3),
    }


def render_summary(orders: list[Order]) -> str:
    data = summary(orders)
    lines = [
        f"Orders:  {data['orders']}",
        f"Revenue: {format_money(data['revenue'])}",
        f"Units:   {data['units']}",
        "Best sellers: " + ", ".join(f"{sku} ({n})" for sku, n in data["best_sellers"]),
        "Top customers: " + ", ".join(f"{name} ({format_money(total)})" for name, total in data["top_customers"]),
    ]
    return "\n".join(lines)
