"""Real tables -> the engine's float32 matrices, and back: how each column is typed, encoded, standardised and filled
back (`columns.py`), the numbers a date is read as and the calendar grid it keeps (`dates.py`), the values a filled
number may take (`support.py`), and the numbers and dates a text column holds (`text_values.py`: "$1,234.50", "12%",
dates or times of day written one way), and which columns number the rows rather than describe them (`row_ids.py`,
for the app and the CLI). The one reading of a table for the estimators, the CLI and the app
(docs/decisions/0012-preprocessing.md).
"""
from .columns import (CLIP, NOMINAL_MIN_LEVELS, ColumnPlan, TablePreprocessor, UnclippedRows, as_frame, column_kind,
                      numbers, plan_column, standardise, unordered)
from .row_ids import row_id
from .text_values import (CATEGORY_MARKS, MISSING_MARKS, date_format, date_words, format_number, missing_marks,
                          number_format, numbers_in_text, parse_numbers, read_dates)

__all__ = ["CLIP", "NOMINAL_MIN_LEVELS", "ColumnPlan", "TablePreprocessor", "UnclippedRows", "as_frame", "column_kind",
           "numbers", "plan_column", "standardise", "unordered", "date_format", "date_words", "number_format",
           "format_number", "numbers_in_text", "parse_numbers", "read_dates", "CATEGORY_MARKS", "MISSING_MARKS",
           "missing_marks", "row_id"]
