"""Preprocessing: encodings, dtype round trips, dropped columns, targets and their errors."""
import warnings

import numpy as np
import pandas as pd
import pytest

from feat_engine.errors import FEATDataWarning, FEATInputError
from feat_engine.preprocess import CLIP, TablePreprocessor
from feat_engine.targets import ClassEncoder, TargetScaler, infer_task, numeric_target, target_rows


def mixed_table(n: int = 40, seed: int = 0) -> pd.DataFrame:
    """Every supported dtype, each with missing cells in different rows."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "int": pd.array(rng.integers(-50, 50, n), dtype="Int64"),
        "int_as_float": rng.integers(0, 9, n).astype(float),
        "float": rng.normal(10, 3, n),
        "bool": pd.array(rng.integers(0, 2, n).astype(bool), dtype="boolean"),
        "bool_obj": pd.Series(list(rng.integers(0, 2, n).astype(bool)), dtype=object),
        "category": pd.Categorical(rng.choice(["lo", "mid", "hi"], n), categories=["lo", "mid", "hi"], ordered=True),
        "string": pd.Series(rng.choice(["red", "green", "blue"], n), dtype="str"),
        "date": pd.Series(pd.date_range("2021-03-01", periods=n, freq="29h")),
        "date_tz": pd.Series(pd.date_range("2021-03-01", periods=n, freq="3D", tz="Europe/Paris")),
        "float32": rng.normal(0, 1, n).astype(np.float32),          # pandas 3 sets no float64 in it
        "Float32": pd.array(rng.normal(5, 2, n).round(3), dtype="Float32"),
        "Int32": pd.array(rng.integers(0, 1000, n), dtype="Int32"),
        "duration": pd.to_timedelta(rng.integers(0, 72, n), unit="h"),     # a number: its seconds
    })
    for j, c in enumerate(df.columns):
        df.loc[df.index[[j, j + 7, j + 19]], c] = None
    return df


def test_round_trip_keeps_dtypes_and_observed_cells_and_fills_every_nan():
    df = mixed_table()
    snapshot = df.copy()
    pre = TablePreprocessor().fit(df)
    z = pre.transform(df)
    assert z.dtype == np.float32 and z.shape == (len(df), len(pre.feature_names_))
    out = pre.inverse_transform(np.random.default_rng(1).normal(size=z.shape), df)
    pd.testing.assert_frame_equal(df, snapshot)                          # input untouched
    assert (out.dtypes == df.dtypes).all(), (out.dtypes, df.dtypes)
    assert not out.isna().any().any()
    for c in df.columns:
        obs = df[c].notna().to_numpy()
        pd.testing.assert_series_equal(out[c][obs], df[c][obs])
    assert set(out["category"]) <= {"lo", "mid", "hi"}
    assert set(out["string"]) <= {"red", "green", "blue"}
    assert set(out["bool_obj"]) <= {True, False}
    assert (out["int_as_float"] == out["int_as_float"].round()).all()
    assert out["date_tz"].dt.tz is not None
    assert next(c for c in pre.plan_ if c.name == "duration").kind == "numeric"
    lo, hi = df["duration"].min(), df["duration"].max()
    assert out["duration"].between(lo, hi).all()


def test_float_observed_cells_are_bit_identical():
    df = pd.DataFrame({"x": [0.1, np.nan, 1e-300, -0.0, 3.3], "y": [1.0, 2.0, 3.0, np.nan, 5.0]})
    pre = TablePreprocessor().fit(df)
    out = pre.inverse_transform(np.zeros((5, 2)), df)
    obs = df["x"].notna().to_numpy()
    assert out["x"].to_numpy()[obs].tobytes() == df["x"].to_numpy()[obs].tobytes()


def test_standardised_and_clipped_with_context_stats():
    x = np.r_[np.zeros(50), np.ones(50), 1e6]
    pre = TablePreprocessor().fit(pd.DataFrame({"x": x}))
    z = pre.transform(pd.DataFrame({"x": [0.0, 1e9, -1e9]}))[:, 0]
    assert z[1] == CLIP and z[2] == -CLIP
    assert z[0] == pytest.approx((0 - x.mean()) / x.std(), rel=1e-5)


def test_inf_becomes_missing_and_unseen_category_becomes_missing():
    ctx = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0], "c": ["a", "b", "a", "b"]})
    pre = TablePreprocessor().fit(ctx)
    z = pre.transform(pd.DataFrame({"x": [np.inf, -np.inf, 2.0], "c": ["a", "zzz", None]}))
    assert np.isnan(z[:2, 0]).all() and not np.isnan(z[2, 0])
    assert not np.isnan(z[0, 1]) and np.isnan(z[1:, 1]).all()


def test_infinite_context_values_are_named_at_fit():
    """±inf in a context column is read as missing, and said so, as it is of query rows."""
    ctx = pd.DataFrame({"x": [1.0, np.inf, 3.0, -np.inf, 5.0], "w": [1.0, 2.0, 3.0, 4.0, 5.0]})
    with pytest.warns(FEATDataWarning, match=r"column 'x': 2 rows hold a value that is not a finite number \(e.g. 'inf', '-inf'\), read as missing"):
        pre = TablePreprocessor().fit(ctx)
    assert np.isnan(pre.transform(ctx)[[1, 3], 0]).all()


def test_datetime_expands_into_parts():
    df = pd.DataFrame({"t": pd.date_range("2020-01-01", periods=30, freq="31h"), "x": np.arange(30.0)})
    pre = TablePreprocessor().fit(df)
    assert pre.feature_names_ == ["t.days", "t.month", "t.weekday", "t.hour", "x"]
    raw = pre.encode(df)
    assert raw["t.hour"].iloc[1] == 7.0 and raw["t.days"].iloc[0] == pytest.approx(18262.0)


def test_numbers_and_dates_written_as_text_are_read_as_such_with_a_warning():
    n = 60
    dates = pd.date_range("2021-01-01", periods=n, freq="D")
    df = pd.DataFrame({"when": dates.strftime("%d/%m/%Y"), "x": [("?" if i == 4 else f"{i * 1.5:.1f}") for i in range(n)],
                       "code": [f"{i % 2}" for i in range(n)], "zip": [f"{i % 7:05d}" for i in range(n)], "word": ["2020-01-01"] * 30 + ["soon"] * 30})
    with pytest.warns(FEATDataWarning) as rec:
        pre = TablePreprocessor().fit(df)
    text = " ".join(str(w.message) for w in rec)
    assert "'when' holds dates (%d/%m/%Y)" in text and "'x' holds numbers" in text and "1 values" in text and "'?'" in text
    # two distinct numbers stay levels, so do codes with leading zeros, and a column with dates in
    # only half its cells stays text
    assert pre.feature_names_ == ["when.days", "when.month", "when.weekday", "x", "code", "zip", "word"]
    assert [c.kind for c in pre.plan_][-3:] == ["categorical"] * 3
    raw = pre.encode(df)
    assert raw["when.days"].iloc[0] == pytest.approx(18628.0) and raw["x"].iloc[3] == 4.5 and np.isnan(raw["x"].iloc[4])
    # imputed cells are written back as text in the column's own format; observed cells keep their bytes
    z = pre.transform(df)               # the model's values: here the true ones
    df.loc[[2, 9], ["when", "x"]] = None
    out = pre.inverse_transform(z, df)
    assert out.loc[2, "when"] == "03/01/2021" and out.loc[2, "x"] == "3.0" and out.loc[4, "x"] == "?"
    assert out.loc[0, "when"] == df.loc[0, "when"] and out["when"].dtype == df["when"].dtype


def test_times_of_day_written_as_text_are_read_as_hours_and_filled_as_written():
    """"11:38:36" or "9:05 PM" is a time of day (it was a category of thousands of levels, each new one read as
    empty); a score such as "2:1" stays a category."""
    n = 40
    times = pd.date_range("2024-01-01 08:00", periods=n, freq="17min")
    df = pd.DataFrame({"at": times.strftime("%H:%M:%S"), "pm": times.strftime("%I:%M %p"),
                       "score": [f"{i % 4}:{i % 3}" for i in range(n)]})
    with pytest.warns(FEATDataWarning) as rec:
        pre = TablePreprocessor().fit(df)
    assert "'at' holds times of day (%H:%M:%S)" in " ".join(str(w.message) for w in rec)
    assert pre.feature_names_ == ["at.days", "at.hour", "pm.days", "pm.hour", "score"]
    raw = pre.encode(df)
    assert raw["at.hour"].iloc[1] == pytest.approx(8 + 17 / 60)
    assert raw["pm.hour"].iloc[-1] == pytest.approx(19 + 3 / 60)
    holes = df.copy()
    holes.loc[5, ["at", "pm"]] = None
    out = pre.inverse_transform(pre.transform(df), holes)
    assert out.loc[5, "at"] == df.loc[5, "at"] and out.loc[5, "pm"] == df.loc[5, "pm"]


def test_a_question_mark_in_a_column_of_categories_or_a_class_target_is_missing_and_none_is_a_category():
    df = pd.DataFrame({"work": [" Private", " ?", " Gov", " Self"] * 10, "pool": ["none", "yes"] * 20,
                       "kind": pd.Categorical(["a", "?", "b", "b"] * 10)})
    with pytest.warns(FEATDataWarning, match=r"'work': 10 cells hold ' \?', written for a missing value"):
        pre = TablePreprocessor().fit(df)
    assert [list(c.categories) for c in pre.plan_] == [[" Gov", " Private", " Self"], ["none", "yes"], ["a", "b"]]
    assert pre.encode(df).isna().sum().tolist() == [10, 0, 10]
    assert np.isnan(pre.nominal_codes(df)[:, 0]).sum() == 10          # the statistics read it as an empty cell too
    with warnings.catch_warnings():                 # query rows: "?" is missing, not a level the context lacks
        warnings.simplefilter("error", FEATDataWarning)
        pre.transform(df.iloc[:4])
    out = pre.marks_as_missing(df)
    assert out.isna().sum().tolist() == [10, 0, 10] and df.notna().all().all()
    y = pd.Series(["yes", "no", "?", "no"] * 10)
    with pytest.warns(FEATDataWarning, match="dropped 10 context rows whose target"):
        assert target_rows(y, 40).sum() == 30
    # a category dtype's unused levels are no classes (scikit-learn's classes_ are the labels y holds)
    unused = pd.Series(pd.Categorical(["b", "a"], categories=["c", "a", "b"]))
    assert list(ClassEncoder().fit(unused).classes_) == ["a", "b"]


def test_numbers_written_with_currency_grouping_percent_parentheses_or_missing_marks_are_numbers_in_their_format():
    rng = np.random.default_rng(0)
    x = rng.uniform(10, 5000, 60).round(2)
    sign = np.where(np.arange(len(x)) % 10 == 5, -1, 1)     # a negative amount in parentheses: "($1,234.50)"
    df = pd.DataFrame({"price": [f"${v:,.2f}" if s > 0 else f"(${v:,.2f})" for v, s in zip(x, sign)], "share": [f"{v % 100:.0f}%" for v in x],
                       "qty": [f"{int(v * 20):,}" for v in x], "euro": [f"{v:.0f} €" for v in x],
                       "ratio": [f"{v % 7:.0f},5" for v in x],         # a decimal comma in a comma file: text
                       "temp": ["?" if i % 4 == 0 else f"{v / 100:.1f}" for i, v in enumerate(x)],   # "?": missing
                       "day": ["-" if i % 4 == 0 else f"{1 + i % 28:02d}/03/2024" for i in range(len(x))]})
    with pytest.warns(FEATDataWarning, match=r"'price' holds numbers such as '\$") as notes:
        pre = TablePreprocessor().fit(df)
    # the example is a value read as a number, not the "?" the column opens with
    assert f"'temp' holds numbers such as '{x[1] / 100:.1f}'" in " ".join(str(w.message) for w in notes)
    assert [(c.kind, c.number_format) for c in pre.plan_] == [
        ("numeric", "${:,.2f};(${:,.2f})"), ("numeric", "{:.0f}%"), ("numeric", "{:,.0f}"), ("numeric", "{:.0f} €"),
        ("categorical", None), ("numeric", "{:.1f}"), ("datetime", None)]
    assert np.isnan(pre.encode(df)["temp"].iloc[0]) and pre.encode(df)["temp"].iloc[1] == round(x[1] / 100, 1)
    raw = pre.encode(df)
    np.testing.assert_allclose(raw["price"], sign * x)
    np.testing.assert_allclose(raw["qty"], [int(v * 20) for v in x])
    # query rows written the same way read the same numbers; a sign before or after the currency is a minus
    query = pd.DataFrame({"price": ["-$1,000.00", "$-2.50", "(12)"], "share": ["5%", "-1%", "x"],
                          "qty": ["1,000", "7", None], "euro": ["3 €", "4", "5 €"], "ratio": ["1,5"] * 3,
                          "temp": ["1.5", "?", "2"], "day": ["-", "01/03/2024", "02/03/2024"]})
    got = pre.encode(query)
    assert got["price"].tolist() == [-1000.0, -2.5, -12.0] and got["share"].tolist()[:2] == [5.0, -1.0]
    assert np.isnan(got["share"].iloc[2]) and got["qty"].tolist()[:2] == [1000.0, 7.0]
    # a filled cell is written as the column writes its numbers (a negative amount in parentheses); the others keep
    # their text
    holes = df.copy()
    holes.loc[[0, 1], ["price", "share", "qty", "euro"]] = None
    holes.loc[5, "price"] = None
    out = pre.inverse_transform(pre.transform(df), holes)
    pd.testing.assert_frame_equal(out.iloc[:2, :4], df.iloc[:2, :4], check_dtype=False)     # (temp, day: no hole)
    pd.testing.assert_frame_equal(out.iloc[2:], df.iloc[2:])
    assert out.loc[5, "price"] == f"(${x[5]:,.2f})"


def test_inverse_keeps_each_number_within_its_columns_support():
    """Model values far outside a column's observed range come back at its bounds, at the decimals its values carry
    (whole where it is whole): a count never below zero stays non-negative, a rating on 1-5 within 1-5, a share of
    two decimals within its range and at two decimals."""
    df = pd.DataFrame({"count": [0, 3, 7, 12, 40, 2], "rating": [1, 5, 3, 4, 2, 3],
                       "share": [0.05, 0.5, 0.25, 0.75, 0.3, 0.6]}, dtype=float)
    pre = TablePreprocessor().fit(df)
    holes = df.copy()
    holes.iloc[:3] = np.nan
    out = pre.inverse_transform(np.array([[-4.9] * 3, [4.9] * 3, [0.37] * 3] + [[0.0] * 3] * 3), holes)
    assert out["count"].iloc[:2].tolist() == [0.0, 40.0] and out["rating"].iloc[:2].tolist() == [1.0, 5.0]
    assert out["share"].iloc[:2].tolist() == [0.05, 0.75] and out["count"].iloc[2] == round(out["count"].iloc[2])
    assert out["share"].iloc[2] == round(out["share"].iloc[2], 2) != round(out["share"].iloc[2], 1)   # its decimals
    pd.testing.assert_frame_equal(out.iloc[3:], df.iloc[3:])


def test_a_column_of_few_values_seen_often_is_filled_with_the_nearest_of_them():
    """Income in four brackets, each seen 15 times, is filled with a bracket (the nearest to FEAT's value),
    never between two; a column of as many rows whose values are many keeps its own fill; and `support.within`
    picks what the nearest by brute force picks, on random values and levels."""
    from feat_engine.preprocess.support import within

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"income": np.repeat([2_500.0, 7_500.0, 15_000.0, 35_000.0], 15),
                       "spend": np.round(rng.uniform(0, 100, 60), 1)})
    pre = TablePreprocessor().fit(df)
    holes = df.copy()
    holes.iloc[:4] = np.nan
    values = np.array([[20_000.0, 42.37], [11_000.0, 42.37], [-1e6, 42.37], [34_000.0, 42.37]] + [[0.0, 0.0]] * 56)
    out = pre.inverse_transform((values - pre.mean_) / pre.std_, holes)
    assert out["income"].iloc[:4].tolist() == [15_000.0, 7_500.0, 2_500.0, 35_000.0]
    assert out["spend"].iloc[:4].tolist() == [42.4] * 4
    levels = np.sort(rng.normal(size=9))
    v = np.append(rng.normal(scale=2, size=500), np.nan)
    brute = levels[np.abs(v[:-1, None] - levels).argmin(1)]
    np.testing.assert_array_equal(within(v, -np.inf, np.inf, None, tuple(levels))[:-1], brute)
    assert np.isnan(within(v, -np.inf, np.inf, None, tuple(levels))[-1])


def test_months_written_without_a_day_are_dates_on_the_month_grid_and_filled_as_written():
    """"Jan 2019", "2019 Jan" (R's yearmonth) and Excel's "Jan-19" are months, which pandas' format guess does not
    read: each column was dropped as a near-unique text. A month of a numbers-first format stays numbers."""
    months = pd.date_range("2019-01-01", periods=30, freq="MS")
    df = pd.DataFrame({"a": months.strftime("%b %Y"), "b": months.strftime("%Y %b"), "c": months.strftime("%b-%y"),
                       "n": months.strftime("%Y%m")})
    with pytest.warns(FEATDataWarning) as rec:
        pre = TablePreprocessor().fit(df)
    assert "'c' holds dates (%b-%y)" in " ".join(str(w.message) for w in rec)
    assert [(c.kind, c.grid) for c in pre.plan_] == [("datetime", "month")] * 3 + [("numeric", None)]
    holes = df.copy()
    holes.loc[3, ["a", "b", "c"]] = None
    out = pre.inverse_transform(pre.transform(df), holes)
    assert out.loc[3, ["a", "b", "c"]].tolist() == ["Apr 2019", "2019 Apr", "Apr-19"]


def test_a_filled_date_stays_within_its_columns_range_and_calendar_grid():
    """Dates come back within the observed range and on the grid every observed date lies on: a monthly column's
    filled dates are months' first days (the app once filled 1968-08-05 into one), a yearly one's years' first
    days, dates at midnight at midnight (a zone's midnight for dates with a time zone, across a change of clocks);
    dates at any time of day as the model gives them. Text keeps its format."""
    from feat_engine.preprocess.dates import date_grid

    n = 24
    df = pd.DataFrame({"month": pd.date_range("2001-01-01", periods=n, freq="MS"),
                       "year": pd.date_range("1990-01-01", periods=n, freq="YS").strftime("%Y-%m-%d"),
                       "day": pd.date_range("2020-03-01", periods=n, freq="3D"),
                       "any": pd.date_range("2020-03-01 05:17", periods=n, freq="29h"), "x": np.arange(n, dtype=float),
                       "paris": pd.date_range("2020-03-20", periods=n, freq="D", tz="Europe/Paris")})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # the note on dates written as text
        pre = TablePreprocessor().fit(df)
    assert [c.grid for c in pre.plan_] == ["month", "year", "day", None, None, "day"]
    holes = df.copy()
    holes.iloc[:4, [0, 1, 2, 3, 5]] = None
    z = pre.transform(df)
    days = [pre.feature_names_.index(f"{c}.days") for c in ("month", "year", "day", "any", "paris")]
    z[:2, days] = [[-4.9], [4.9]]                     # far outside: the range's ends
    z[2:4] += 0.013                                   # near a value, off the grid
    out = pre.inverse_transform(z, holes)
    month, year = out["month"].iloc[:4], pd.to_datetime(out["year"].iloc[:4])
    assert month.iloc[0] == df["month"].min() and month.iloc[1] == df["month"].max() and (month.dt.day == 1).all()
    assert (year.dt.month == 1).all() and (year.dt.day == 1).all() and out["year"].iloc[1] == df["year"].max()
    assert (out["day"].iloc[:4] == out["day"].iloc[:4].dt.normalize()).all()
    paris = out["paris"].iloc[:4]
    assert (paris == paris.dt.normalize()).all() and paris.iloc[1] == df["paris"].max()     # 00:00+01:00, 00:00+02:00
    assert out["any"].iloc[0] == df["any"].min() and out["any"].iloc[1] == df["any"].max()
    pd.testing.assert_frame_equal(out.iloc[4:], df.iloc[4:])
    assert date_grid(pd.Series(pd.to_datetime(["2020-01-01", None]))) == "year"
    assert date_grid(pd.Series(pd.date_range("2020-01-01", periods=3, tz="Asia/Tokyo"))) == "day"   # its midnights
    assert date_grid(pd.Series(pd.date_range("2020-01-01", periods=3, tz="UTC").tz_convert("Asia/Tokyo"))) is None


def test_a_filled_duration_is_a_whole_number_of_its_columns_unit():
    """Durations are numbers (their seconds), filled back as durations within their range and in whole hours where
    every observed one is (a shift of 2 h 36 min 1 s is none the column holds), else to the second."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"shift": pd.to_timedelta(rng.integers(1, 12, 60), unit="h"),
                       "wait": pd.to_timedelta(rng.integers(0, 5000, 60), unit="s"), "x": rng.normal(size=60)})
    pre = TablePreprocessor().fit(df)
    assert [(c.kind, c.step) for c in pre.plan_] == [("numeric", 3600.0), ("numeric", 1.0), ("numeric", None)]
    holes = df.copy()
    holes.loc[:5, ["shift", "wait"]] = None
    z = pre.transform(df)
    z[:6, :2] += 0.37                                 # off every unit
    out = pre.inverse_transform(z, holes)
    assert (out.dtypes == df.dtypes).all()
    shift, wait = out["shift"].iloc[:6].dt.total_seconds(), out["wait"].iloc[:6].dt.total_seconds()
    assert (shift % 3600 == 0).all() and (shift != df["shift"].iloc[:6].dt.total_seconds()).any()
    assert shift.between(3600, 11 * 3600).all() and (wait % 1 == 0).all()


def test_iso_dates_as_text_give_only_our_warning():
    df = pd.DataFrame({"day": pd.date_range("2022-05-20", periods=40).strftime("%Y-%m-%d"), "x": np.arange(40.0)})
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        pre = TablePreprocessor().fit(df)
    assert [w.category for w in rec] == [FEATDataWarning] and "%Y-%m-%d" in str(rec[0].message)
    assert pre.feature_names_[0] == "day.days"


def test_timestamps_written_with_two_offsets_are_read_in_utc_and_filled_so():
    """ISO timestamps with their offset from UTC, which changes with summer time ("+0100", "+0200"): pandas reads no
    single zone there and raised; they are read in UTC, and a filled one is written with UTC's offset."""
    when = pd.date_range("2024-03-20", periods=40, freq="D", tz="Europe/Paris").strftime("%Y-%m-%dT%H:%M:%S%z")
    df = pd.DataFrame({"when": when, "x": np.arange(40.0)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FEATDataWarning)      # the note on dates written as text
        pre = TablePreprocessor().fit(df)
    z = pre.transform(df)
    days = z[:, pre.feature_names_.index("when.days")] * pre.std_[0] + pre.mean_[0]
    gaps = np.sort(np.diff(days))                   # a day apart, but 23 hours across the change of clocks
    np.testing.assert_allclose(gaps, [23 / 24] + [1.0] * 38, atol=1e-4)
    holes = df.assign(when=df["when"].where(df.index > 1))
    out = pre.inverse_transform(z, holes)["when"]
    assert out.iloc[:2].str.endswith("+0000").all() and out.iloc[2:].equals(df["when"].iloc[2:])
    assert pd.to_datetime(out.iloc[0], utc=True) == pd.Timestamp("2024-03-20", tz="Europe/Paris")


def test_a_category_of_dates_is_read_as_dates_and_a_category_of_numbers_stays_one():
    # tables loaded with their text columns as categories (the development tables, OpenML's) hold their dates there
    n = 40
    day = pd.Series(pd.date_range("2022-05-20", periods=n).strftime("%Y-%m-%d"), dtype="category")
    df = pd.DataFrame({"day": day, "code": pd.Series([str(20220101 + i % 3) for i in range(n)], dtype="category"),
                       "x": np.arange(n, dtype=float)})
    with pytest.warns(FEATDataWarning, match="'day' holds dates .* as categories"):
        pre = TablePreprocessor().fit(df)
    assert pre.feature_names_ == ["day.days", "day.month", "day.weekday", "code", "x"]
    assert pre.encode(df)["day.days"].iloc[0] == pytest.approx(19132.0)
    # a filled date is written back as one of the column's own, in its format, the column still a category
    z = pre.transform(df)
    df.loc[[3], "day"] = None
    df["day"] = df["day"].cat.remove_unused_categories()
    out = pre.inverse_transform(z, df)
    assert out.loc[3, "day"] == "2022-05-23" and isinstance(out["day"].dtype, pd.CategoricalDtype)
    assert out.drop(index=3).equals(df.drop(index=3).astype({"day": out["day"].dtype}))


def test_id_and_constant_columns_are_dropped_with_a_warning_naming_them():
    n = 50
    df = pd.DataFrame({"user_id": [f"u{i:04d}" for i in range(n)], "k": 1.0, "x": np.arange(n) % 7.0,
                       "c": ["a", "b"] * (n // 2)})
    with pytest.warns(FEATDataWarning) as rec:
        pre = TablePreprocessor().fit(df)
    text = " ".join(str(w.message) for w in rec)
    assert "user_id" in text and "'k'" in text
    assert pre.feature_names_ == ["x", "c"]
    df.loc[3, "k"] = np.nan
    assert pre.inverse_transform(np.zeros((n, 2)), df).loc[3, "k"] == 1.0   # a constant column's NaN takes the constant
    wide = df.assign(**{f"flag_{i}": 0 for i in range(12)})          # many: the first ten named, the rest counted
    with pytest.warns(FEATDataWarning) as rec:
        TablePreprocessor().fit(wide)
    assert "'flag_7', 'flag_8'] and 3 more: they carry no information" in " ".join(str(w.message) for w in rec)


def test_bad_tables():
    with pytest.raises(FEATInputError, match=r"X: Found array with 0 sample\(s\) \(shape=\(0, 0\)\)"):
        TablePreprocessor().fit(pd.DataFrame())
    with pytest.raises(FEATInputError, match="no feature columns left"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FEATDataWarning)
            TablePreprocessor().fit(pd.DataFrame({"a": [1, 1, 1], "b": [np.nan] * 3}))
    pre = TablePreprocessor().fit(pd.DataFrame({"a": [1.0, 2.0], "b": [3.0, 4.0]}))
    with pytest.raises(FEATInputError, match=r"missing \['b'\], unexpected \['z'\]"):
        pre.transform(pd.DataFrame({"a": [1.0], "z": [2.0]}))
    reordered = pre.transform(pd.DataFrame({"b": [3.0], "a": [1.0]}))
    assert np.allclose(reordered, pre.transform(pd.DataFrame({"a": [1.0], "b": [3.0]})))


def test_class_labels_round_trip_and_errors():
    y = pd.Series(["cat", "dog", "cat", "emu"])
    enc = ClassEncoder().fit(y)
    assert list(enc.classes_) == ["cat", "dog", "emu"]
    assert list(enc.inverse_transform(enc.transform(y))) == list(y)
    with pytest.raises(FEATInputError, match=r"single class \(3\);"):            # the label, not np.int64(3)
        ClassEncoder().fit(pd.Series([3, 3, 3]))


def test_regression_target_scaling_and_errors():
    y = pd.Series([1.0, 2.0, 3.0, 10.0])
    sc = TargetScaler().fit(y)
    z = sc.transform(y)
    assert abs(z.mean()) < 1e-6 and np.allclose(sc.inverse_transform(z), y)
    with pytest.raises(FEATInputError, match="not numeric"):
        TargetScaler().fit(pd.Series(["a", "b"]))
    const = TargetScaler().fit(pd.Series([3.0] * 5))
    assert np.array_equal(const.transform(pd.Series([3.0])), [0.0])
    assert np.array_equal(const.inverse_transform(np.array([-0.1, 0.0, 0.4])), [3.0, 3.0, 3.0])


def test_a_target_value_that_sets_the_scale_alone_is_named():
    """A typo of 1e9 among 300 prices of spread 10 is named with its row; a clean target, a heavy-tailed one (a
    log-normal income of 2,000 rows) and a short one are not."""
    rng = np.random.default_rng(0)
    price = pd.Series(10 * rng.normal(size=300) + 50, name="price", index=np.arange(300) + 100)
    typo = price.copy()
    typo[105] = 1e9
    with pytest.warns(FEATDataWarning, match=r"target 'price': the context row 105 holds 1e\+09, far outside the "
                                             r"others \(\d+\.?\d* to \d+\.?\d*\)"):
        TargetScaler().fit(typo)
    with pytest.warns(FEATDataWarning, match=r"holds 999,999, far outside the others \([\d,.]+ to \d,\d{3}"):
        TargetScaler().fit(pd.concat([price * 60, pd.Series([999_999.0])], ignore_index=True))   # thousands grouped
    with warnings.catch_warnings():
        warnings.simplefilter("error", FEATDataWarning)
        for clean in (price, pd.Series(rng.lognormal(0, 1, 2000)), typo[:19]):
            TargetScaler().fit(clean)


def test_target_rows():
    with pytest.warns(FEATDataWarning, match="dropped 1 context rows"):
        keep = target_rows(pd.Series([1.0, np.nan, 2.0]), 3)
    assert keep.tolist() == [True, False, True]
    with pytest.raises(FEATInputError, match="all missing"):
        target_rows(pd.Series([np.nan, np.nan]), 2)
    with pytest.raises(FEATInputError, match="2 values but the table has 3 rows"):
        target_rows(pd.Series([1, 2]), 3)


def test_infer_task():
    assert infer_task(pd.Series(["a", "b"])) == "classification"
    assert infer_task(pd.Series([0, 1, 2, 1])) == "classification"
    assert infer_task(pd.Series(np.linspace(0, 1, 50))) == "regression"
    assert infer_task(pd.Series(np.arange(50))) == "regression"
    # numbers written as text are numbers here too: prices are a regression, three codes still classes
    prices = pd.Series([f"${v:,.2f}" for v in np.linspace(5, 5000, 40)], name="price")
    assert infer_task(prices) == "regression" and infer_task(pd.Series(["1", "2", "3"] * 5)) == "classification"
    with pytest.warns(FEATDataWarning, match="target 'price' holds numbers as text"):
        y = numeric_target(prices)
    assert y.iloc[-1] == 5000.0 and y.name == "price"
