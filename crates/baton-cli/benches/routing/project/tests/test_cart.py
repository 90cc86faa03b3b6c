import unittest
from decimal import Decimal

from shop.cart import Cart


def cart(region="CA", code=""):
    c = Cart(region=region)
    c.add("b1", "Book", "20.00", 2, "books")
    c.add("g1", "Bread", "4.00", 1, "groceries")
    if code:
        c.apply_code(code)
    return c


class Lines(unittest.TestCase):
    def test_same_sku_adds_up(self):
        c = cart()
        c.add("b1", "Book", "20.00", 1, "books")
        self.assertEqual(len(c.lines), 2)
        self.assertEqual(c.lines[0].quantity, 3)

    def test_remove_unknown(self):
        with self.assertRaises(KeyError):
            cart().remove("nope")

    def test_quantity_positive(self):
        with self.assertRaises(ValueError):
            cart().add("x", "X", "1.00", 0)


class Totals(unittest.TestCase):
    def test_no_discount(self):
        # 44.00 + 7.25% of the 40.00 of books = 46.90
        self.assertEqual(cart().total(), Decimal("46.90"))

    def test_discount_lowers_the_tax_too(self):
        # 10% off: 39.60, tax on the 36.00 of discounted books = 2.61, total 42.21
        self.assertEqual(cart(code="WELCOME10").total(), Decimal("42.21"))

    def test_tax_is_on_the_discounted_amount(self):
        self.assertEqual(cart(code="STAFF30").tax(), Decimal("40.00") * Decimal("0.70") * Decimal("0.0725"))

    def test_tax_free_region(self):
        self.assertEqual(cart(region="OR", code="SPRING15").total(), Decimal("37.40"))

    def test_summary_names_the_code(self):
        self.assertIn("discount WELCOME10 -10%", cart(code="welcome10").summary())


if __name__ == "__main__":
    unittest.main()
