"""A small shop: carts, prices by region, and a command line that prints totals."""
