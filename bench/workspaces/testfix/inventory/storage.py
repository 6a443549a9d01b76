"""Keeping the inventory in a JSON file: loading, saving atomically, and a change log."""

from __future__ import annotations

import json
import os
import tempfile
from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path

from inventory.models import InventoryError, Item, StockLevel

FORMAT_VERSION = 2


class StorageError(Exception):
    """The file is missing, unreadable, or in a format this version cannot read."""


def item_to_dict(item: Item) -> dict:
    return {
        "sku": item.sku,
        "name": item.name,
        "unit_price": str(item.unit_price),
        "category": item.category,
        "taxable": item.taxable,
    }


def item_from_dict(data: dict) -> Item:
    try:
        return Item(
            sku=data["sku"],
            name=data["name"],
            unit_price=Decimal(data["unit_price"]),
            category=data.get("category", "general"),
            taxable=data.get("taxable", True),
        )
    except (KeyError, ArithmeticError) as error:
        raise StorageError(f"bad item record {data!r}: {error}") from None


def upgrade(data: dict) -> dict:
    """Version 1 kept prices in cents as integers; version 2 keeps decimal strings."""
    if data.get("version", 1) == 1:
        for record in data.get("stock", []):
            cents = record["item"].pop("price_cents")
            record["item"]["unit_price"] = str(Decimal(cents) / 100)
        data["version"] = 2
    return data


class Store:
    """The stock of every item, backed by one JSON file."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.stock: dict[str, StockLevel] = {}
        self.log: list[str] = []

    def load(self) -> None:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise StorageError(f"{self.path} does not exist; create it with Store.save()") from None
        except json.JSONDecodeError as error:
            raise StorageError(f"{self.path} is not valid JSON: {error}") from None
        data = upgrade(data)
        if data["version"] > FORMAT_VERSION:
            raise StorageError(f"{self.path} has format {data['version']}; this version reads {FORMAT_VERSION}")
        self.stock = {}
        for record in data.get("stock", []):
            item = item_from_dict(record["item"])
            self.stock[item.sku] = StockLevel(item, record.get("on_hand", 0), record.get("reserved", 0))

    def save(self) -> None:
        """Write to a temporary file next to the real one, then rename: a crash leaves the old file whole."""
        data = {
            "version": FORMAT_VERSION,
            "saved": datetime.now(timezone.utc).isoformat(),
            "stock": [
                {"item": item_to_dict(level.item), "on_hand": level.on_hand, "reserved": level.reserved}
                for level in sorted(self.stock.values(), key=lambda level: level.item.sku)
            ],
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".inventory-")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as file:
                json.dump(data, file, indent=2)
            os.replace(temporary, self.path)
        except BaseException:
            os.unlink(temporary)
            raise

    def add_item(self, item: Item, on_hand: int = 0) -> None:
        if item.sku in self.stock:
            raise InventoryError(f"{item.sku} is already stocked")
        self.stock[item.sku] = StockLevel(item, on_hand)
        self.record(f"added {item.sku} with {on_hand} on hand")

    def restock(self, sku: str, quantity: int) -> None:
        self.level(sku).restock(quantity)
        self.record(f"restocked {sku} +{quantity}")

    def level(self, sku: str) -> StockLevel:
        try:
            return self.stock[sku]
        except KeyError:
            raise InventoryError(f"unknown SKU {sku}") from None

    def low_stock(self, below: int = 5) -> list[StockLevel]:
        return sorted((level for level in self.stock.values() if level.available < below),
                      key=lambda level: (level.available, level.item.sku))

    def record(self, event: str) -> None:
        stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
        self.log.append(f"{stamp} {event}")
