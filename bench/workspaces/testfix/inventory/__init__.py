"""A small inventory and ordering library: items, stock, prices and order reports."""

from inventory.models import Item, Order, OrderLine, StockLevel
from inventory.pricing import line_total, order_total

__all__ = ["Item", "Order", "OrderLine", "StockLevel", "line_total", "order_total"]
