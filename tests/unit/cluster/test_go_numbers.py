"""Decimal integers in request text read as Go's strconv reads them: any number of leading
zeros, a sign, and no Python limit on the digits (a longer string than 4,300 digits made
int() raise, and the server answer 500)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from engine.cluster.apiserver.encoding.go_numbers import BEYOND_64_BITS, decimal, go_int64

INT64 = st.integers(min_value=-(2**63), max_value=2**64 - 1)


@given(INT64, st.integers(min_value=0, max_value=6000), st.sampled_from(["", "+"]))
def test_a_64_bit_number_reads_as_itself_whatever_its_leading_zeros(
    number: int, zeros: int, plus: str,
) -> None:
    sign = "-" if number < 0 else plus
    assert decimal(sign + "0" * zeros + str(abs(number))) == number


@given(st.integers(min_value=21, max_value=20_000), st.booleans())
def test_a_number_longer_than_any_64_bit_one_is_out_of_range_not_an_error(
    digits: int, negative: bool,
) -> None:
    text = ("-" if negative else "") + "9" * digits
    assert decimal(text) == (-BEYOND_64_BITS if negative else BEYOND_64_BITS)


def test_the_largest_numbers_of_20_digits_are_read_exactly() -> None:
    assert decimal("18446744073709551615") == 2**64 - 1
    assert decimal("99999999999999999999") == 10**20 - 1
    assert decimal("-" + "0" * 5000 + "9223372036854775808") == -(2**63)
    assert decimal("100000000000000000000") == BEYOND_64_BITS


def test_only_a_sign_and_ascii_digits_are_a_number() -> None:
    for text in ("", "+", "-", " 1", "1 ", "1_000", "0x10", "1e3", "1.0", "\u0661", "--1"):
        assert decimal(text) is None, text
    assert decimal("0") == 0 and decimal("-0") == 0 and decimal("000") == 0


def test_an_int64_is_what_strconv_parseint_takes_at_64_bits() -> None:
    assert go_int64("9223372036854775807") == 2**63 - 1
    assert go_int64("-9223372036854775808") == -(2**63)
    assert go_int64("+007") == 7
    for text in ("9223372036854775808", "-9223372036854775809", "9" * 5000, "x", "", "1.0"):
        assert go_int64(text) is None, text
