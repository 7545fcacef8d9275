"""Bytes for st.download_button: CSV and Parquet, built without Streamlit."""
from __future__ import annotations

import io
from collections.abc import Callable, Hashable
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from feat_engine.predictions import prediction_table
from feat_engine.preprocess import date_format, format_number, number_format, parse_numbers
from feat_engine.preprocess.text_values import SHAPE_VALUES

from . import figures, numbers

WHEN = "%Y-%m-%d %H:%M:%S"     # a date of a text column whose own format its cells do not show (all of them empty)
from .io import TableError


def csv_bytes(df: pd.DataFrame, index: bool = False) -> bytes:
    """UTF-8 CSV with a header; missing cells empty."""
    return df.to_csv(index=index).encode("utf-8")


def parquet_bytes(df: pd.DataFrame, index: bool = False) -> bytes:
    """Parquet (pyarrow). A column pyarrow cannot store (mixed types) raises TableError naming it."""
    buf = io.BytesIO()
    out = df.rename(columns=str) if not all(isinstance(c, str) for c in df.columns) else df
    try:
        out.to_parquet(buf, index=index, engine="pyarrow")
    except Exception as e:  # ArrowTypeError / ArrowInvalid
        bad = _mixed_column(out)
        where = f"column {bad!r} mixes types" if bad else f"the table cannot be stored ({str(e)[:150]})"
        raise TableError(f"Parquet export failed: {where}.", "Download the CSV instead.") from None
    return buf.getvalue()


def _mixed_column(df: pd.DataFrame) -> str | None:
    for c in df.columns:
        if df[c].dtype == object and df[c].dropna().map(type).nunique() > 1:
            return str(c)
    return None


def predictions_frame(index, y_pred, proba=None, classes=None, y_true=None, target: str = "target") -> pd.DataFrame:
    """One row per predicted row: its row id in the uploaded table ("row"), then the table `feat predict` writes
    (`feat_engine.predictions.prediction_table`: the prediction under the target's name and, for
    classification, one probability column per class), then the true value when known ("<target> (actual)")."""
    out = np.asarray(y_pred) if proba is None or classes is None else np.asarray(proba, dtype=float)
    table = prediction_table(out, classes, str(target), pd.Index(list(index), name="row")).reset_index()
    if y_true is not None:
        table[f"{target} (actual)"] = list(y_true)
    return table


def filled_target_table(df: pd.DataFrame, rows, y_pred, target: str) -> pd.DataFrame:
    """The whole uploaded table, rows in their order, with the predictions `y_pred` of the rows `rows` (row ids of
    `df`, the rows whose target was missing) in the column `target`, the observed values unchanged, and a column
    "<target> filled by FEAT" after it: True on the filled rows, False on the others. Where the file holds the target
    as text that the Data view read as numbers or dates ("$1,234.50", "03/01/2024"), the predictions are written the
    way the column writes its values, as `merge_columns` writes filled cells."""
    out = df.copy()
    filled = out.index.isin(list(rows))
    column = out[target].astype(object)
    values = pd.Series(list(y_pred), index=list(rows)).reindex(out.index[filled])
    if _text_read_as_values(out[target], values):
        values = _written_like(out[target], values)
    column[filled] = values.to_numpy()
    out[target] = column.infer_objects()
    flag = f"{target} filled by FEAT"
    while flag in out.columns:
        flag += " (FEAT)"
    out.insert(out.columns.get_loc(target) + 1, flag, filled)
    return out


def merge_columns(original: pd.DataFrame, filled: pd.DataFrame, mask: pd.DataFrame | None = None,
                  whole: pd.DataFrame | None = None) -> pd.DataFrame:
    """The original table with the columns of `filled` swapped in (same order and index); columns the model did not
    see are kept as they were. A column the file holds as text that the Data view read as numbers or dates
    ("$1,234.50", "12%", "03/01/2024") keeps its text, and its cells `mask` marks as filled are written the way the
    column writes its values (`number_format`, `date_format`; read off the rows of `whole` where given, as where
    `original` holds a few rows of the table, all empty in a column), so that nothing else in it changes."""
    out = original.copy()
    for c in filled.columns:
        if c not in out.columns:
            continue
        s, f = original[c], filled[c]
        reread = mask is not None and _text_read_as_values(s, f)
        out[c] = s.astype(object).mask(mask[c], _written_like((original if whole is None else whole)[c], f)) \
            if reread else f
    return out


def as_written(original: pd.DataFrame, frame: pd.DataFrame, mask: pd.DataFrame,
               formats: dict) -> tuple[pd.DataFrame, dict]:
    """`frame` (rows and columns of `original` as the app reads them) with each column the file holds as text written
    as the file writes it (`merge_columns`; cells `mask` marks as filled in the column's way), and the `formats` of
    the columns still read as numbers or dates: a view shows what its download holds ("2015-01-01", "11:38:36", not
    "2015-01-01 00:00:00", "1900-01-01 11:38:36"); each column written as the file's first SHAPE_VALUES rows write
    it, also where the rows shown are all empty in it (a date format read off a million rows took 7 s)."""
    out = merge_columns(original.loc[frame.index, list(frame.columns)], frame, mask, original.head(SHAPE_VALUES))
    return out, {c: f for c, f in formats.items() if c in out and out[c].dtype == frame[c].dtype}


def _text_read_as_values(s: pd.Series, values: pd.Series) -> bool:
    """Whether a column the file holds as text (`s`) came back as numbers or dates (`values`): its filled cells are
    then written the column's way (`_written_like`)."""
    return (pd.api.types.is_object_dtype(s) or pd.api.types.is_string_dtype(s)) and \
        (pd.api.types.is_numeric_dtype(values) or pd.api.types.is_datetime64_any_dtype(values))


def _written_like(s: pd.Series, values: pd.Series) -> pd.Series:
    """`values` (numbers or dates read from the text column s) as text the way s writes them."""
    if pd.api.types.is_datetime64_any_dtype(values):
        return values.dt.strftime(date_format(s) or WHEN).astype(object)
    return values.map(_number_writer(s), na_action="ignore").astype(object)


def _date_writer(s: pd.Series) -> Callable[[Any], str]:
    """A date written as the text column s writes its dates ("Jan 1960", "03/01/2024")."""
    fmt = date_format(s) or WHEN
    return lambda v: pd.Timestamp(v).strftime(fmt)


def _number_writer(s: pd.Series) -> Callable[[float], str]:
    """A number written as the text column s writes its numbers ("$1,234.50", "12%")."""
    shape = number_format(s) or ("{:.0f}" if np.all(np.mod(parse_numbers(s).dropna(), 1) == 0) else "{:.6g}")
    return partial(format_number, shape)


def value_writers(original: pd.DataFrame, filled: pd.DataFrame) -> dict[Hashable, Callable[[Any], str]]:
    """For each column the file holds as text that came back as numbers or dates (`filled`'s), a function writing one
    value the way the column writes its values, read off its first SHAPE_VALUES rows: what `merge_columns` writes
    filled cells with, for a view that writes about those cells (a filled "Jan 1960", a typical error "± $2,300")."""
    head = original.head(SHAPE_VALUES)
    return {c: _number_writer(head[c]) if pd.api.types.is_numeric_dtype(filled[c]) else _date_writer(head[c])
            for c in filled.columns if c in original.columns and _text_read_as_values(original[c], filled[c])}


HIGHLIGHT = "background-color: #ffe08a; font-weight: 600"


def highlight(df: pd.DataFrame, mask: pd.DataFrame, style: str = HIGHLIGHT, formats: dict | None = None):
    """A pandas Styler that marks the cells where `mask` is True, each column written by its kind
    (`numbers.style`: `formats` by column label, else the column's own)."""
    m = mask.reindex(index=df.index, columns=df.columns, fill_value=False).to_numpy(dtype=bool)

    def paint(_):
        return pd.DataFrame(np.where(m, style, ""), index=df.index, columns=df.columns)

    styled = numbers.style(df, formats)
    return styled if isinstance(styled, pd.DataFrame) else styled.apply(paint, axis=None)


REPORT_ROWS = 2000      # rows of a result table a report holds (the CSV download has them all)


def report_html(title: str, parts: list[tuple]) -> bytes:
    """One self-contained HTML page of a run: each part a heading and its content, in order: text (Markdown-free
    lines), a list of lines, a DataFrame (its first REPORT_ROWS rows, each column written as the app writes it,
    `numbers.text_frame`: by its kind, or by the formatters a third item of the part gives by column label, empty
    cells empty; a named index as its first column, a 0, 1, 2, ... one left out) or a Plotly figure (interactive,
    laid out as on the page by `figures.standalone`; plotly.js is written once, in the page, so the file opens
    offline)."""
    import html

    body, script = [], True
    for heading, content, *how in parts:
        body.append(f"<h2>{html.escape(heading)}</h2>")
        if isinstance(content, pd.DataFrame):
            shown = content.head(REPORT_ROWS)
            formats = {**numbers.formats_for(content), **(how[0] if how else {})}   # kinds from every row
            frame = numbers.text_frame(shown, formats)
            keyed = frame.index.name is not None          # a table keyed by its index ("method"): the key a column
            frame = frame.reset_index() if keyed else frame
            body.append(frame.to_html(index=not keyed and not isinstance(frame.index, pd.RangeIndex), na_rep="",
                                      border=0, classes="table"))
            if len(content) > len(shown):
                body.append(f"<p>The first {len(shown):,} of {len(content):,} rows; the CSV download has them all.</p>")
        elif hasattr(content, "to_html"):            # a Plotly figure
            body.append(figures.standalone(content).to_html(full_html=False, include_plotlyjs=script))
            script = False
        elif isinstance(content, (list, tuple)):
            body.append("<ul>" + "".join(f"<li>{html.escape(str(x))}</li>" for x in content) + "</ul>")
        else:
            body.append(f"<p>{html.escape(str(content))}</p>")
    style = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}"
             "table{border-collapse:collapse;font-size:13px}td,th{padding:3px 8px;border-bottom:1px solid #ddd;"
             "text-align:right}h2{margin-top:1.6em}")
    page = (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{style}</style></head><body><h1>{html.escape(title)}</h1>{''.join(body)}</body></html>")
    return page.encode("utf-8")
