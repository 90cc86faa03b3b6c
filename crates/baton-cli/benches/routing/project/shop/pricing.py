"""Prices by region: sales-tax rates and the rules for rounding money."""

from decimal import Decimal, ROUND_HALF_UP

CENT = Decimal("0.01")

# Sales tax by region code, as a fraction of the taxable amount.
TAX_RATES = {
    "AL": Decimal("0.04"),
    "AK": Decimal("0.00"),
    "AZ": Decimal("0.056"),
    "AR": Decimal("0.065"),
    "CA": Decimal("0.0725"),
    "CO": Decimal("0.029"),
    "CT": Decimal("0.0635"),
    "DE": Decimal("0.00"),
    "FL": Decimal("0.06"),
    "GA": Decimal("0.04"),
    "HI": Decimal("0.04"),
    "ID": Decimal("0.06"),
    "IL": Decimal("0.0625"),
    "IN": Decimal("0.07"),
    "IA": Decimal("0.06"),
    "KS": Decimal("0.065"),
    "KY": Decimal("0.06"),
    "LA": Decimal("0.0445"),
    "ME": Decimal("0.055"),
    "MD": Decimal("0.06"),
    "MA": Decimal("0.0625"),
    "MI": Decimal("0.06"),
    "MN": Decimal("0.06875"),
    "MS": Decimal("0.07"),
    "MO": Decimal("0.04225"),
    "MT": Decimal("0.00"),
    "NE": Decimal("0.055"),
    "NV": Decimal("0.0685"),
    "NH": Decimal("0.00"),
    "NJ": Decimal("0.06625"),
    "NM": Decimal("0.04875"),
    "NY": Decimal("0.04"),
    "NC": Decimal("0.0475"),
    "ND": Decimal("0.05"),
    "OH": Decimal("0.0575"),
    "OK": Decimal("0.045"),
    "OR": Decimal("0.00"),
    "PA": Decimal("0.06"),
    "RI": Decimal("0.07"),
    "SC": Decimal("0.06"),
    "SD": Decimal("0.042"),
    "TN": Decimal("0.07"),
    "TX": Decimal("0.0625"),
    "UT": Decimal("0.061"),
    "VT": Decimal("0.06"),
    "VA": Decimal("0.053"),
    "WA": Decimal("0.065"),
    "WV": Decimal("0.06"),
    "WI": Decimal("0.05"),
    "WY": Decimal("0.04"),
}

# Categories that are not taxed in any region.
EXEMPT_CATEGORIES = frozenset({"groceries", "prescriptions"})


class UnknownRegion(ValueError):
    """A region code that is not in TAX_RATES."""


def tax_rate(region):
    """The sales-tax rate of `region` (a two-letter code, any case)."""
    code = region.strip().upper()
    try:
        return TAX_RATES[code]
    except KeyError:
        raise UnknownRegion(f"unknown region {region!r}") from None


def to_cents(amount):
    """`amount` rounded to whole cents, halves away from zero."""
    return Decimal(amount).quantize(CENT, rounding=ROUND_HALF_UP)


def parse_price(text):
    """A price written as `12.50`, `$12.50` or `12,50`; refuses negatives."""
    cleaned = text.strip().lstrip("$").replace(",", ".")
    value = Decimal(cleaned)
    if value < 0:
        raise ValueError(f"negative price {text!r}")
    return to_cents(value)


def taxable(category):
    """Whether items of `category` are taxed."""
    return category.lower() not in EXEMPT_CATEGORIES
