"""Kubernetes quantities as exact decimals: numbers, suffixes, exponents, signs; and a clear
ValueError for whatever is not a quantity."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.cluster.quantities import parse_quantity

INT64 = 2**63
MULTIPLIERS = {
    "": Decimal(1), "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("0.001"),
    "k": Decimal(1000), "M": Decimal(10**6), "G": Decimal(10**9), "T": Decimal(10**12),
    "P": Decimal(10**15), "E": Decimal(10**18),
    "Ki": Decimal(2**10), "Mi": Decimal(2**20), "Gi": Decimal(2**30), "Ti": Decimal(2**40),
    "Pi": Decimal(2**50), "Ei": Decimal(2**60),
}


@pytest.mark.parametrize(("text", "expected"), [
    ("2", Decimal(2)), ("0", Decimal(0)), ("0.1", Decimal("0.1")), (".5", Decimal("0.5")),
    ("1.", Decimal(1)), ("+1", Decimal(1)), ("-500m", Decimal("-0.5")),
    ("100m", Decimal("0.1")), ("250u", Decimal("0.00025")), ("3n", Decimal("3e-9")),
    ("1k", Decimal(1000)), ("16Gi", Decimal(17179869184)), ("1.5Gi", Decimal(1610612736)),
    ("0.5Ki", Decimal(512)), ("1Ei", Decimal(2**60)), ("1E", Decimal(10**18)),
    ("1e3", Decimal(1000)), ("5E-2", Decimal("0.05")), ("1.5e+2", Decimal(150)),
    ("  2Mi ", Decimal(2 * 2**20)),
])
def test_strings_parse_to_exact_base_units(text: str, expected: Decimal) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize(("number", "expected"), [
    (2, Decimal(2)), (0, Decimal(0)), (0.1, Decimal("0.1")), (1.5, Decimal("1.5")),
])
def test_json_numbers_parse_without_binary_float_noise(number: float, expected: Decimal) -> None:
    assert parse_quantity(number) == expected


@pytest.mark.parametrize("text", [
    "", " ", "abc", "Gi", ".", "+", "--1", "1Ki2", "1.2.3", "1 Gi", "1e", "1e1.5",
    "1K", "1KI", "1mi", "1i", "0x10", "NaN", "Infinity",
])
def test_non_quantities_are_refused_saying_so(text: str) -> None:
    with pytest.raises(ValueError, match=r"is not a quantity \(e\.g\. 2, 500m, 16Gi\)$"):
        parse_quantity(text)


def test_the_message_quotes_the_stripped_text() -> None:
    with pytest.raises(ValueError) as caught:
        parse_quantity(" lots ")
    assert str(caught.value) == "'lots' is not a quantity (e.g. 2, 500m, 16Gi)"


@pytest.mark.parametrize("value", [True, False])
def test_booleans_are_not_quantities(value: bool) -> None:
    with pytest.raises(ValueError, match=f"^{value} is not a quantity$"):
        parse_quantity(value)


@pytest.mark.parametrize("value", [None, [1], {"cpu": 1}])
def test_other_json_values_are_not_quantities(value: object) -> None:
    with pytest.raises(ValueError, match="is not a quantity"):
        parse_quantity(value)


@pytest.mark.parametrize("suffix", sorted(MULTIPLIERS))
@given(data=st.data())
def test_an_integer_with_a_suffix_is_that_integer_times_the_multiplier(
        suffix: str, data: st.DataObject) -> None:
    bound = INT64 // max(1, int(MULTIPLIERS[suffix]))  # what a Quantity can hold
    n = data.draw(st.integers(-bound, bound - 1))
    assert parse_quantity(f"{n}{suffix}") == n * MULTIPLIERS[suffix]


@given(n=st.integers(-INT64, INT64 - 1), exponent=st.integers(-9, 18),
       e=st.sampled_from("eE"))
def test_an_exponent_scales_by_that_power_of_ten(n: int, exponent: int, e: str) -> None:
    assert parse_quantity(f"{n}{e}{exponent}") == Decimal(n) * Decimal(10) ** exponent
