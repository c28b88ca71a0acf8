"""The vectorised trace shape check agrees with the csv module's row-by-row check."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from simsched.errors import InputError
from simsched.workload.formats.checks import _check_shape_by_rows, check_shape


def verdict(check, text: str) -> str | None:
    try:
        check(text, "t.csv")
    except InputError as exc:
        return str(exc)
    return None


# Commas, line breaks, blanks and a two-byte character, so that byte offsets and character
# offsets differ; no quotes (those files take the row-by-row path itself).
texts = st.text(alphabet=[",", "\n", " ", "a", "b", "é"], max_size=60)


@settings(max_examples=200, deadline=None)
@given(texts)
def test_same_verdict_as_the_row_by_row_check(text: str) -> None:
    assert verdict(check_shape, text) == verdict(_check_shape_by_rows, text)


def test_a_damaged_row_is_named_by_its_line_after_blank_lines() -> None:
    text = "a,b,c\n1,2,3\n\n , ,\n4,5\n"
    assert verdict(check_shape, text) == "t.csv line 5: 2 fields, but the header names 3"


def test_a_quoted_file_takes_the_row_by_row_path() -> None:
    # the comma inside the quotes is not a separator: three fields, as the header's
    assert verdict(check_shape, 'a,b,c\n"1,5",2,3\n') is None
    assert verdict(check_shape, 'a,b,c\n"1,5",2\n') == (
        "t.csv line 2: 2 fields, but the header names 3"
    )
