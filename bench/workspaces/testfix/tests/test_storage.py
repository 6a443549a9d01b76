import json
from decimal import Decimal

import pytest

from inventory.models import InventoryError, Item
from inventory.storage import Store, StorageError


def test_save_and_load_round_trip(tmp_path):
    store = Store(tmp_path / "stock.json")
    store.add_item(Item("PEN1", "Blue pen", Decimal("1.50")), on_hand=40)
    store.save()
    again = Store(tmp_path / "stock.json")
    again.load()
    assert again.level("PEN1").on_hand == 40
    assert again.level("PEN1").item.unit_price == Decimal("1.50")


def test_version_1_files_are_upgraded(tmp_path):
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"stock": [{"item": {"sku": "MUG3", "name": "Mug", "price_cents": 800}, "on_hand": 3}]}))
    store = Store(path)
    store.load()
    assert store.level("MUG3").item.unit_price == Decimal("8")


def test_missing_file_says_how_to_create_it(tmp_path):
    with pytest.raises(StorageError, match="create it"):
        Store(tmp_path / "none.json").load()


def test_unknown_sku(tmp_path):
    with pytest.raises(InventoryError):
        Store(tmp_path / "x.json").level("NOPE")
