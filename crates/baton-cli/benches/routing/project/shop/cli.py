"""`python3 -m shop.cli REGION [CODE] < items.csv`: prints a cart's summary.

Each input line is `sku,name,price,quantity[,category]`.
"""

import sys

from .cart import Cart


def read_items(stream):
    for number, raw in enumerate(stream, 1):
        raw = raw.strip()
        if not raw or raw.startswith("#"):
            continue
        parts = [p.strip() for p in raw.split(",")]
        if len(parts) < 4:
            raise SystemExit(f"line {number}: expected sku,name,price,quantity[,category]")
        sku, name, price, quantity = parts[:4]
        category = parts[4] if len(parts) > 4 else "general"
        yield sku, name, price, int(quantity), category


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        raise SystemExit("usage: python3 -m shop.cli REGION [CODE] < items.csv")
    cart = Cart(region=argv[0])
    for sku, name, price, quantity, category in read_items(sys.stdin):
        cart.add(sku, name, price, quantity, category)
    if len(argv) > 1:
        cart.apply_code(argv[1])
    print(cart.summary())


if __name__ == "__main__":
    main()
