import unittest
from decimal import Decimal

from shop import pricing


class TaxRate(unittest.TestCase):
    def test_known_region_any_case(self):
        self.assertEqual(pricing.tax_rate(" ca "), Decimal("0.0725"))

    def test_unknown_region(self):
        with self.assertRaises(pricing.UnknownRegion):
            pricing.tax_rate("ZZ")


class Money(unittest.TestCase):
    def test_halves_round_up(self):
        self.assertEqual(pricing.to_cents(Decimal("2.675")), Decimal("2.68"))

    def test_parse_forms(self):
        for text in ["12.50", "$12.50", "12,50", " 12.5 "]:
            self.assertEqual(pricing.parse_price(text), Decimal("12.50"), text)

    def test_parse_refuses_negative(self):
        with self.assertRaises(ValueError):
            pricing.parse_price("-1")

    def test_exempt(self):
        self.assertFalse(pricing.taxable("Groceries"))
        self.assertTrue(pricing.taxable("books"))


if __name__ == "__main__":
    unittest.main()
