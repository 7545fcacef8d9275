"""feat_engine.io: the one table reader of the CLI and the app (encoding and delimiter
detection, format checks, errors that name the file and the problem)."""
from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from feat_engine import FEATInputError
from feat_engine.errors import TableError
from feat_engine.io import load_table, read_table, write_table

FRAME = pd.DataFrame({"région": ["Île-de-France", "Bretagne", "Provence"], "prix": [1.5, 2.25, 3.0],
                      "niveau": ["élevé", "bas", "élevé"]})


def _text(df: pd.DataFrame, sep: str, encoding: str) -> bytes:
    return df.to_csv(index=False, sep=sep).encode(encoding)


@pytest.mark.parametrize("name, data, encoding, delimiter", [
    ("latin.csv", _text(FRAME, ";", "latin-1"), "cp1252", ";"),
    ("table.tsv", _text(FRAME, "\t", "utf-8"), "utf-8", "\t"),
    ("bom.csv", b"\xef\xbb\xbf" + _text(FRAME, ",", "utf-8"), "utf-8-sig", ","),
    ("pipes.txt", _text(FRAME, "|", "utf-16"), "utf-16", "|"),
])
def test_detects_encoding_and_delimiter(tmp_path, name, data, encoding, delimiter):
    got = load_table(data, name)
    assert (got.encoding, got.delimiter) == (encoding, delimiter)
    pd.testing.assert_frame_equal(got.df, FRAME)
    (tmp_path / name).write_bytes(data)
    pd.testing.assert_frame_equal(read_table(tmp_path / name), FRAME)          # a path reads the same


def test_decimal_commas_become_numbers_with_a_note():
    """A semicolon-separated export with decimal commas (and dots grouping thousands) gives numbers;
    a column with any other value, or a comma-delimited file, keeps its text."""
    data = ("prix;poids;code;note;montant;taux\n1,5;1.234,5;007;a,b;1 234,50 €;12,5 %\n-2,25;3;1,2x;c;-5,00 €;3 %\n"
            "3;0,5;12;d;€ 7,25;-1,5%\n").encode("cp1252")
    got = load_table(data, "europe.csv")
    assert got.df["prix"].tolist() == [1.5, -2.25, 3.0] and got.df["poids"].tolist() == [1234.5, 3.0, 0.5]
    assert got.df["montant"].tolist() == [1234.5, -5.0, 7.25] and got.df["taux"].tolist() == [12.5, 3.0, -1.5]
    assert got.df["code"].tolist() == ["007", "1,2x", "12"] and got.df["note"].tolist() == ["a,b", "c", "d"]
    assert any("'prix', 'poids', 'montant', 'taux' read as numbers written with a decimal comma" in n for n in got.notes)
    plain = load_table(b'a,b\n"1,5",x\n"2,5",y\n', "us.csv")
    assert plain.df["a"].tolist() == ["1,5", "2,5"] and not plain.notes


def test_a_file_without_a_header_row_keeps_its_first_row_and_says_so():
    """A first row of data (numbers with decimals over numbers, or values its columns hold below) is not taken for
    column names; a header of whole numbers over numbers (years) is kept as one."""
    iris = b"5.1,3.5,setosa\n4.9,3.0,setosa\n6.2,3.4,virginica\n4.7,3.2,setosa\n"
    got = load_table(iris, "iris.data.csv")
    assert list(got.df.columns) == ["column 1", "column 2", "column 3"] and got.df.shape == (4, 3)
    assert got.df.iloc[0].tolist() == [5.1, 3.5, "setosa"]
    assert "the first row is data, not column names (5.1, 3.5, setosa)" in got.notes[-1]
    flags = load_table(b"0,1,0\n1,0,0\n0,0,1\n", "flags.csv")   # a repeated cell: no header either (was refused)
    assert list(flags.df.columns) == ["column 1", "column 2", "column 3"] and len(flags.df) == 3
    years = load_table(b"2019,2020\n1,2\n3,4\n5,6\n", "years.csv")
    assert list(years.df.columns) == ["2019", "2020"] and not years.notes
    named = load_table(b"length,kind\n5.1,setosa\n4.9,setosa\n6.2,virginica\n", "named.csv")
    assert list(named.df.columns) == ["length", "kind"] and not named.notes


def test_lines_above_the_table_are_skipped_and_named():
    """A title and a blank line above the header (a report's export) are skipped with a note, and they do not throw
    the delimiter off; the table was one column named after the title, or refused for its field counts."""
    got = load_table(b"Sales Report 2024\n\nregion,units,price\nnorth,3,1.5\nsouth,4,2.5\nwest,1,3.0\n", "report.csv")
    assert list(got.df.columns) == ["region", "units", "price"] and got.df["price"].tolist() == [1.5, 2.5, 3.0]
    assert got.notes == ["skipped 2 lines above the table ('Sales Report 2024')"]
    de = load_table("Bericht\r\nregion;menge;preis\r\nnord;3;1,5\r\nsüd;4;2,5\r\nwest;1;3,0\r\n".encode(), "de.csv")
    assert list(de.df.columns) == ["region", "menge", "preis"] and de.df["preis"].tolist() == [1.5, 2.5, 3.0]
    indexed = load_table(b",a,b\n0,1.5,x\n1,2.5,y\n2,3.5,z\n", "indexed.csv")     # an empty name is not a title
    assert list(indexed.df.columns) == ["Unnamed: 0", "a", "b"] and not indexed.notes
    trailing = load_table(b"a,b\n1,2,\n3,4,\n5,6,\n", "trailing.csv")      # nor is a header without their last comma
    assert list(trailing.df.columns) == ["a", "b"] and not trailing.notes


def test_a_last_row_of_totals_is_left_out_and_named():
    """A last row that says "Total" and holds a column's sum over the rows above (a spreadsheet's or an accounting
    export's) is left out with a note, in text and Excel files, also where the amounts are written "$1,234.50"; the
    column its empty cell made float is whole numbers again. A last row that says "Total" but sums nothing, or that
    sums a column but says nothing, is data and stays."""
    rows = "region,units,amount\nnorth,3,$1.50\nsouth,4,\"$1,002.50\"\nwest,1,$3.00\n"
    got = load_table(f"{rows}Grand total:,,\"$1,007.00\"\n".encode(), "ledger.csv")
    assert got.df["region"].tolist() == ["north", "south", "west"] and got.df["units"].tolist() == [3, 4, 1]
    assert got.df["units"].dtype == np.int64 and got.notes == [
        "left out the last row ('Grand total'): it totals the rows above ('amount' $1,007.00 is their sum), so it is "
        "not one of them"]
    for last in ("Total,5,$2.00", "east,8,\"$1,007.00\"", "Total,0,$0.00"):
        kept = load_table(f"{rows}{last}\n".encode(), "ledger.csv")
        assert len(kept.df) == 4 and not kept.notes, last
    book = io.BytesIO()
    pd.DataFrame({"shop": ["a", "b", "c", "Sum"], "sales": [1.25, 2.5, 3.0, 6.75]}).to_excel(book, index=False)
    got = load_table(book.getvalue(), "sales.xlsx")
    assert got.df["shop"].tolist() == ["a", "b", "c"] and "('sales' 6.75 is their sum)" in got.notes[0]


def test_line_breaks_inside_values_stay_in_them():
    """Free text with line breaks, as pandas writes it: a quoted \\n, and a bare \\r in a file whose lines end in
    \\n (it stopped the upload with "new-line character seen in unquoted field", or split the row in two)."""
    notes = pd.DataFrame({"text": ["first\nsecond", "one\rtwo", "plain"], "likes": [3, 4, 5]})
    for sep in (",", ";"):
        got = load_table(notes.to_csv(index=False, sep=sep).encode(), "notes.csv")
        pd.testing.assert_frame_equal(got.df, notes, check_dtype=False)
    windows = load_table(b'text,likes\r\n"a\r\nb",3\r\nc,4\r\nd,5\r\n', "windows.csv")      # \r\n lines: as before
    assert windows.df["likes"].tolist() == [3, 4, 5] and list(windows.df.columns) == ["text", "likes"]


def test_given_options_override_detection():
    data = _text(FRAME, ";", "latin-1")
    assert load_table(data, "t.csv", delimiter=";", encoding="latin-1").df.equals(FRAME)
    with pytest.raises(TableError) as ei:
        load_table(data, "t.csv", encoding="utf-8")
    assert ei.value.problem.startswith("t.csv: cannot decode the bytes as utf-8") and "encoding" in ei.value.fix


def test_errors_are_input_errors_with_problem_and_fix():
    with pytest.raises(FEATInputError) as ei:
        read_table(b"a,b\n\x00\x01,\x02\n", "bin.csv")
    e = ei.value
    assert isinstance(e, TableError) and str(e) == f"{e.problem} {e.fix}"
    assert e.problem.startswith("bin.csv: the bytes are not text")


@pytest.mark.parametrize("name, data, needle", [
    ("old.xls", b"\xd0\xcf\x11\xe0", ".xls format is not supported"),
    ("t.json", b"{}", "unsupported file type '.json'"),
    ("x.csv", b"PAR1....", "Parquet file with a text extension"),
    ("x.tsv", b"PK\x03\x04....", "Excel workbook (a zip) with a text extension"),
    ("b.xlsx", b"PK\x03\x04....", "not a readable Excel .xlsx workbook"),
    ("h.csv", b"a,b\n", "the table is empty (0 rows x 2 columns"),
    ("dup.csv", b"a,b,a\n1,2,3\n", "duplicate column names 'a'"),
])
def test_format_and_content_checks(name, data, needle):
    with pytest.raises(TableError) as ei:
        load_table(data, name)
    assert ei.value.problem.startswith(f"{name}: ") and needle in ei.value.problem and ei.value.fix


def test_excel_notes_the_first_of_several_sheets_and_names_become_strings():
    buf = io.BytesIO()
    with pd.ExcelWriter(buf) as w:
        pd.DataFrame({2020: [1, 2], "b": [3, 4]}).to_excel(w, sheet_name="data", index=False)
        pd.DataFrame({"z": [0]}).to_excel(w, sheet_name="other", index=False)
    got = load_table(buf.getvalue(), "book.xlsx")
    assert list(got.df.columns) == ["2020", "b"] and got.notes == ["read the first sheet 'data' of 2"]
    # a report's title and a blank row above the table: skipped with a note (they were the names, the header a row)
    report = io.BytesIO()
    with pd.ExcelWriter(report) as w:
        pd.DataFrame([["Sales Report 2024"]]).to_excel(w, index=False, header=False)
        pd.DataFrame({"region": ["north", "south"], "units": [3, 4], "price": [1.5, 2.5]}).to_excel(w, startrow=2,
                                                                                                    index=False)
    got = load_table(report.getvalue(), "report.xlsx")
    assert list(got.df.columns) == ["region", "units", "price"] and got.df["price"].tolist() == [1.5, 2.5]
    assert got.notes == ["skipped 2 rows above the table ('Sales Report 2024')"]


def test_write_table_refuses_what_it_cannot_write(tmp_path):
    with pytest.raises(TableError, match="not supported"):
        write_table(FRAME, tmp_path / "out.xls")
    write_table(FRAME, tmp_path / "out.tsv")
    pd.testing.assert_frame_equal(read_table(tmp_path / "out.tsv"), FRAME)
