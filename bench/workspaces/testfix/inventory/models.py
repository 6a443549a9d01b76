"""The data the rest of the package works on: items, stock levels, orders and their lines."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal


class InventoryError(Exception):
    """Raised when an operation would leave the inventory in an impossible state."""


@dataclass(frozen=True)
class Item:
    """Something we sell. Prices are in the shop's currency, per unit, before tax."""

    sku: str
    name: str
    unit_price: Decimal
    category: str = "general"
    taxable: bool = True

    def __post_init__(self) -> None:
        if not self.sku or not self.sku.isalnum():
            raise ValueError(f"invalid SKU {self.sku!r}: letters and digits only")
        if self.unit_price < 0:
            raise ValueError(f"{self.sku}: a price cannot be negative")


@dataclass
class StockLevel:
    """How many units of an item are on the shelf, and how many are promised to open orders."""

    item: Item
    on_hand: int = 0
    reserved: int = 0

    @property
    def available(self) -> int:
        return self.on_hand - self.reserved

    def reserve(self, quantity: int) -> None:
        if quantity <= 0:
            raise ValueError("reserve a positive quantity")
        if quantity > self.available:
            raise InventoryError(f"{self.item.sku}: only {self.available} available, {quantity} asked")
        self.reserved += quantity

    def release(self, quantity: int) -> None:
        if quantity > self.reserved:
            raise InventoryError(f"{self.item.sku}: cannot release {quantity}, {self.reserved} reserved")
        self.reserved -= quantity

    def ship(self, quantity: int) -> None:
        """Units leave the shelf: they must have been reserved first."""
        self.release(quantity)
        self.on_hand -= quantity

    def restock(self, quantity: int) -> None:
        if quantity <= 0:
            raise ValueError("restock a positive quantity")
        self.on_hand += quantity


@dataclass
class OrderLine:
    item: Item
    quantity: int

    def __post_init__(self) -> None:
        if self.quantity <= 0:
            raise ValueError(f"{self.item.sku}: quantity must be positive, not {self.quantity}")


@dataclass
class Order:
    """A customer's order. Lines for the same item are merged when added."""

    number: str
    customer: str
    placed: date = field(default_factory=date.today)
    lines: list[OrderLine] = field(default_factory=list)
    coupon: str | None = None

    def add(self, item: Item, quantity: int) -> None:
        for line in self.lines:
            if line.item.sku == item.sku:
                line.quantity += quantity
                return
        self.lines.append(OrderLine(item, quantity))

    def remove(self, sku: str) -> None:
        before = len(self.lines)
        self.lines = [line for line in self.lines if line.item.sku != sku]
        if len(self.lines) == before:
            raise KeyError(sku)

    @property
    def n_units(self) -> int:
        return sum(line.quantity for line in self.lines)

    def skus(self) -> list[str]:
        return sorted(line.item.sku for line in self.lines)


def reserve_order(order: Order, stock: dict[str, StockLevel]) -> None:
    """Reserve every line of an order, or none of them if one cannot be served."""
    done: list[OrderLine] = []
    try:
        for line in order.lines:
            stock[line.item.sku].reserve(line.quantity)
            done.append(line)
    except (InventoryError, KeyError):
        for line in done:
            stock[line.item.sku].release(line.quantity)
        raise
