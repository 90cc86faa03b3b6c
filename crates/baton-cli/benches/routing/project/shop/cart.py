"""A shopping cart: lines of items, a discount code, and the total with tax."""

from dataclasses import dataclass, field
from decimal import Decimal

from . import pricing

# Discount codes and the fraction they take off the subtotal of taxable and exempt items alike.
DISCOUNTS = {
    "WELCOME10": Decimal("0.10"),
    "SPRING15": Decimal("0.15"),
    "STAFF30": Decimal("0.30"),
}


@dataclass
class Line:
    sku: str
    name: str
    unit_price: Decimal
    quantity: int = 1
    category: str = "general"

    def amount(self):
        return self.unit_price * self.quantity


@dataclass
class Cart:
    region: str
    lines: list = field(default_factory=list)
    discount_code: str = ""

    def add(self, sku, name, unit_price, quantity=1, category="general"):
        """Adds `quantity` of an item; adding a SKU already in the cart raises its quantity."""
        if quantity < 1:
            raise ValueError(f"quantity must be at least 1, got {quantity}")
        price = pricing.parse_price(str(unit_price))
        for line in self.lines:
            if line.sku == sku:
                line.quantity += quantity
                return line
        line = Line(sku, name, price, quantity, category)
        self.lines.append(line)
        return line

    def remove(self, sku):
        """Removes every unit of `sku`; a SKU not in the cart is an error."""
        for i, line in enumerate(self.lines):
            if line.sku == sku:
                del self.lines[i]
                return
        raise KeyError(sku)

    def apply_code(self, code):
        """Sets the discount code; unknown codes are refused."""
        code = code.strip().upper()
        if code not in DISCOUNTS:
            raise ValueError(f"unknown discount code {code!r}")
        self.discount_code = code

    def subtotal(self):
        return sum((line.amount() for line in self.lines), Decimal("0"))

    def discount_rate(self):
        return DISCOUNTS.get(self.discount_code, Decimal("0"))

    def taxable_amount(self):
        return sum(
            (line.amount() for line in self.lines if pricing.taxable(line.category)),
            Decimal("0"),
        )

    def tax(self):
        """Tax on the taxable lines, after the discount."""
        rate = pricing.tax_rate(self.region)
        return self.taxable_amount() * rate

    def total(self):
        """Subtotal, less the discount, plus tax; in whole cents."""
        discounted = self.subtotal() * (1 - self.discount_rate())
        return pricing.to_cents(discounted + self.tax())

    def summary(self):
        """The lines and totals as text, one line each."""
        rows = [f"{line.quantity} x {line.name} @ {line.unit_price}" for line in self.lines]
        rows.append(f"subtotal {pricing.to_cents(self.subtotal())}")
        if self.discount_code:
            rows.append(f"discount {self.discount_code} -{self.discount_rate() * 100:.0f}%")
        rows.append(f"tax {pricing.to_cents(self.tax())}")
        rows.append(f"total {self.total()}")
        return "\n".join(rows)
