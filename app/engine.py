"""The app's only door to FEAT: thin calls to feat_engine's public API (estimators,
relation_matrix, dependence_matrix, checkpoint, dask_scoring), timing them and turning the engine's warnings
and input errors into messages for the page. No Streamlit and no modelling here."""
from __future__ import annotations

import copy
import inspect
import logging
import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

import feat_engine as fe
from app import summary
from app.numbers import DIGITS, column_format, format_value
from feat_engine.inference import runs_at_once, uses_bf16
from feat_engine.progress import PREP_PACE, SCORING_PACE, Progress, StepCounter, engine_seconds
from feat_engine.reading.read_budget import ReadPlan

LOG = logging.getLogger(__name__)


class EngineError(ValueError):
    """FEAT refused the input; the message says why and what to do."""


@dataclass
class Outcome:
    value: object
    seconds: float
    warnings: list[str] = field(default_factory=list)


def _call(fn, *args, **kwargs) -> Outcome:
    """Run fn, collecting FEAT's notes on the table (`FEATDataWarning`s) for the page; other libraries' warnings
    (numpy's, say, which no analyst could act on) go to the server's log. Its input errors become EngineError."""
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = fn(*args, **kwargs)
        except EngineError:        # already in the page's words (`score_on_dask`)
            raise
        except (ValueError, TypeError, KeyError) as e:
            raise EngineError(f"FEAT could not use this input: {e}. Check the target and the column "
                              "types ('use as') in Data.") from None
        except MemoryError:
            raise EngineError("FEAT ran out of memory on this table. Use fewer rows or columns, "
                              "or lower 'Max example rows FEAT reads'.") from None
        except RuntimeError as e:
            msg = str(e).splitlines()[0][:300]
            if "out of memory" in msg.lower():
                raise EngineError(f"FEAT ran out of memory ({msg}). Use fewer rows or columns, "
                                  "or lower 'Max example rows FEAT reads'.") from None
            raise EngineError(f"FEAT failed on this table ({type(e).__name__}: {msg}).") from None
    seconds = time.perf_counter() - t0
    notes = []
    for w in caught:    # FEAT's own notes on the table for the page; a library's (numpy's, say) to the server's log
        text = str(w.message)
        if not issubclass(w.category, fe.FEATDataWarning):
            LOG.warning("%s (%s:%s): %s", w.category.__name__, w.filename, w.lineno, text)
        elif text not in notes:
            notes.append(text)
    return Outcome(value, seconds, notes)


def reading_plan(task: str, params: dict, n_rows: int, n_features: int, n_classes: int = 0) -> ReadPlan:
    """What FEAT's estimator with these settings reads of a table of n_rows example rows: its members and rows per
    member within the estimators' reading budget (`read_budget`), the one rule the engine applies at fit."""
    est = (fe.FEATClassifier if task == "classification" else fe.FEATRegressor)(**_kwargs(params, None))
    return est.read_plan(max(n_rows, 2), n_features, runs_per_member(task, params, n_classes))


def runs_per_member(task: str, params: dict, n_classes: int) -> int:
    """Engine runs a member makes on the same rows: one per class where each class is read against the rest."""
    one_vs_rest = task == "classification" and fe.FEATClassifier(**_kwargs(params, None)).multiclass == "ovr"
    return n_classes if one_vs_rest and n_classes > 2 else 1


def predict_seconds(plan: ReadPlan, n_rows: int, runs: int) -> Callable[[bool], float]:
    """The seconds predicting n_rows after a fit that reads `plan` (`runs` labellings a member) takes, with the
    engine's reading (True) or the classical models alone (False: a blend at weight 1), at the paces measured so far
    on this machine, read at each call (`PREP_PACE`, `progress.engine_seconds`, its runs side by side, and
    `SCORING_PACE`; none measured yet counts 0): the rows preprocessed, then each in every member and labelling, in
    the engine's cells (a query row costing about what a context row does, decision 0006) and scored by the stacked
    model (docs/decisions/0038-app.md)."""
    rows = n_rows * plan.members * runs

    def seconds(engine: bool) -> float:
        reading = (engine_seconds(rows * (plan.width + 1), runs_at_once(rows)) or 0.0) if engine else 0.0
        return (PREP_PACE.seconds(n_rows) or 0.0) + (SCORING_PACE.seconds(rows) or 0.0) + reading
    return seconds


def _kwargs(params: dict, progress: Progress | None) -> dict:
    kw = {k: v for k, v in params.items() if v is not None}
    if progress is not None:
        kw["progress"] = progress
    return kw


def _phase(progress: Progress | None, words: str | Callable[[], str]) -> Progress | None:
    """`progress` with each message headed by the phase it belongs to ("learning from ...", "predicting ...",
    "filling the empty cells"; a callable: read at each report): the Progress bar tells the time left of a phase
    (`state.progress_callback`), and a `StepCounter`'s stream heads its runs' reports with their own labels
    ("column 'a'", "attention")."""
    if progress is None:
        return None
    return lambda done, total, msg: progress(done, total, f"{words() if callable(words) else words}: {msg}")


def fit(X_train: pd.DataFrame, y_train: pd.Series, task: str, params: dict,
        progress: Progress | None = None, exact: dict | None = None) -> Outcome:
    """FEAT's fit on the example rows (the context, and everything `fit` prepares from it); `params` set where not
    None, `exact` as they are (None included). value: the fitted estimator, which `predict` reads and the Predict
    view keeps for a second click on the same data."""
    def go():
        cls = fe.FEATClassifier if task == "classification" else fe.FEATRegressor
        n, settings = len(X_train), {**_kwargs(params, None), **(exact or {})}
        est = cls(**settings)

        def words() -> str:     # the rows the fit's own plan reads (`read_plan_`, made before its first report): fewer
            plan = getattr(est, "read_plan_", None)             # than the table's columns foretell where coded levels
            read = n if plan is None else plan.rows             # widen the rows (`reading/coded_levels.py`)
            return f"learning from {n:,} example rows" if read >= n else f"reading {read:,} of {n:,} example rows"
        return est.set_params(**_kwargs({}, _phase(progress, words))).fit(X_train, y_train)

    return _call(go)


def predict(est: fe.FEATClassifier | fe.FEATRegressor, X_test: pd.DataFrame,
            progress: Progress | None = None, scheduler: str = "") -> Outcome:
    """A fitted estimator's predictions, made here or, with `scheduler` (a Dask scheduler's address), by that
    cluster's workers (`score_on_dask`). value: dict(pred, proba, classes, reading, what_feat_did): the estimator's
    technical sentence on how it read the table, and the same in an analyst's words."""
    def go():
        est.set_params(progress=_phase(progress, f"predicting {len(X_test):,} rows"))
        said = {"reading": est.reading_, "what_feat_did": what_feat_did(est), "read_rows": est.read_plan_.rows,
                "share": classical_share(est)}
        classifier = isinstance(est, fe.FEATClassifier)
        if scheduler:
            out = score_on_dask(est, X_test, scheduler, progress)
        else:
            out = est.predict_proba(X_test) if classifier else est.predict(X_test)
        if classifier:
            proba = np.asarray(out, dtype=float)
            classes = list(est.classes_)
            pred = np.asarray(classes, dtype=object)[proba.argmax(axis=1)] if len(proba) else np.array([], dtype=object)
            return {"pred": pred, "proba": proba, "classes": classes, **said}
        return {"pred": np.asarray(out, dtype=float), "proba": None, "classes": None, **said}

    return _call(go)


# rows to predict per Dask partition at most; a cluster of W workers gets at least 2W partitions, so that each
# worker has work and the progress moves
DASK_PART_ROWS = 20_000


def score_on_dask(est: fe.FEATClassifier | fe.FEATRegressor, X_test: pd.DataFrame, address: str,
                  progress: Progress | None = None) -> np.ndarray:
    """What `est.predict_proba` (a classifier) or `est.predict` (a regressor) gives for X_test, scored by the
    workers of the Dask scheduler at `address`, partition by partition (`dask_scoring.predict_partitions`), against
    est's one context fitted here: the same for every row, since a row's prediction never depends on the other
    rows. progress: (partitions scored, partitions). The engine's notes on unreadable values in X_test are raised
    here, as the in-process prediction raises them (the workers' own stay in their logs). EngineError, naming the
    address, when dask or distributed is missing, the scheduler does not answer or has no workers, or the workers
    fail."""
    from feat_engine import dask_scoring
    tell = _phase(progress, f"predicting {len(X_test):,} rows on the Dask cluster") or (lambda *_: None)
    est.preprocessor_.warn_unreadable(X_test, est.preprocessor_.detail(X_test, "query").values, "query")
    here = "Or empty 'Score on a Dask cluster' to score on this machine."
    tell(0, 1, "connecting")
    try:
        import dask.dataframe  # noqa: F401  (the dask extra on this machine, checked before connecting)
        with dask_scoring.connect(address) as client:
            try:
                workers = len(client.scheduler_info()["workers"])
                table = _scored_parts(client, est, X_test, workers, tell) if workers else None
            except Exception as e:      # a worker's error comes back here as it was raised there, whatever its kind
                raise EngineError(f"The Dask cluster at {address} could not score the rows ({type(e).__name__}: "
                                  f"{str(e).splitlines()[0][:300] if str(e) else 'no message'}). Its workers need "
                                  f"feat-engine installed, the version this app runs. {here}") from None
    except ImportError as e:
        raise EngineError(f"FEAT cannot score on the Dask cluster at {address}: this machine lacks "
                          f"{e.name or 'dask or distributed'} (pip install \"feat-engine[dask]\"). {here}") from None
    except ConnectionError as e:        # `connect`'s: the address, and why
        raise EngineError(f"{e} {here}") from None
    if table is None:
        raise EngineError(f"The Dask scheduler at {address} has no workers, so nothing would score the rows: start "
                          f"some (dask worker {address}). {here}")
    # the columns of `prediction_frame`: the prediction, then (a classifier) a probability per class in classes_ order
    return table.iloc[:, 1:].to_numpy() if isinstance(est, fe.FEATClassifier) else table.iloc[:, 0].to_numpy()


def _scored_parts(client, est: fe.FEATClassifier | fe.FEATRegressor, X_test: pd.DataFrame, workers: int,
                  tell: Progress) -> pd.DataFrame:
    """`prediction_frame` of X_test computed on the Client's cluster of `workers` workers, in X_test's row order
    and in the arithmetic this machine takes (a precision of "auto" would resolve on each worker's own hardware);
    tell(done, total, message) as partitions finish."""
    import dask.dataframe as dd
    import distributed

    from feat_engine import dask_scoring
    est = copy.copy(est).set_params(precision="bf16" if uses_bf16(est.precision, est.device) else "fp32")
    name = "prediction"                 # the predictions' column: a name X_test lacks (`prediction_frame` drops it)
    while name in X_test.columns:
        name += "_"
    n_parts = max(1, min(len(X_test), max(2 * workers, -(-len(X_test) // DASK_PART_ROWS))))
    query = dd.from_pandas(X_test, npartitions=n_parts, sort=False)        # unsorted: the rows keep their order
    tell(0, query.npartitions, f"sending FEAT to {workers} worker{'s' if workers > 1 else ''}")
    futures = client.compute(dask_scoring.predict_partitions(est, query, name).to_delayed())
    scored = {}
    for future, part in distributed.as_completed(futures, with_results=True):   # raises a failed part's error
        scored[future.key] = part
        tell(len(scored), len(futures), f"{len(scored)} of {len(futures)} groups of rows scored")
    return pd.concat([scored[f.key] for f in futures])


# example rows the first answer reads (`first_answer`): one reading of a context this long comes in a second or two
# on two cores, whatever the table's length (docs/decisions/0039-app-first-answer.md)
FIRST_ANSWER_ROWS = 1024


def first_answer(X_train: pd.DataFrame, y_train: pd.Series, X_test: pd.DataFrame, task: str, params: dict,
                 progress: Progress | None = None) -> Outcome:
    """A quick first answer for the Predict view to show while the full reading runs: FEAT once, on at most
    FIRST_ANSWER_ROWS random example rows read as one context, without the classical model beside it, and the
    classes of a multiclass target all from one head where it has slots enough; for the first FIRST_ANSWER_ROWS
    rows of X_test. value: as `predict`'s, with `rows` (example rows read)."""
    rows = min(params.get("max_context") or FIRST_ANSWER_ROWS, FIRST_ANSWER_ROWS)
    quick = {"n_estimators": 1, "local_context": None, "view": None, "blend": False, "max_context": rows}
    if task == "classification":
        model = params.get("checkpoint")
        if 2 < y_train.nunique() <= (model.cfg if isinstance(model, fe.FEAT) else fe.ModelConfig()).max_classes:
            quick["multiclass"] = "head"
    fitted = fit(X_train, y_train, task, params, progress, exact=quick)
    out = predict(fitted.value, X_test.iloc[:FIRST_ANSWER_ROWS], progress)
    out.seconds += fitted.seconds
    out.value["rows"] = min(len(X_train), rows)
    return out


def attributions(est: fe.FEATClassifier | fe.FEATRegressor, X: pd.DataFrame,
                 progress: Progress | None = None) -> Outcome:
    """`feat_engine.masked_attributions` of a fitted estimator on the rows X. value: (rows x columns) DataFrame."""
    def go():
        est.set_params(progress=_phase(progress, f"hiding each of {X.shape[1]} columns in {len(X):,} rows"))
        return fe.masked_attributions(est, X)

    return _call(go)


def what_feat_did(est: fe.FEATClassifier | fe.FEATRegressor) -> list[str]:
    """How a fitted estimator read its table, in an analyst's words, one sentence an item."""
    n, d = est.context_.shape
    members, choice, plan = est.members_, est.member_choice_, est.read_plan_
    dates = [f"'{c.name}' as its {summary.date_parts(c.parts)}"
             for c in est.preprocessor_.plan_ if c.kind == "datetime" and not c.levels and len(c.parts) > 1]
    read_as = "" if d == est.n_features_in_ else f" (read as {d} features{': ' if dates else ''}{'; '.join(dates)})"
    columns = f"{est.n_features_in_} column{'s' if est.n_features_in_ != 1 else ''}"
    said = [f"FEAT learned from {n:,} example rows and {columns}{read_as} by reading them, without "
            "training on them." if plan.rows == n else
            f"FEAT read {plan.rows:,} of the {n:,} example rows, a random share, to stay within its reading budget "
            f"(a few minutes on two cores); the classical model beside it learned from all {n:,}."]
    again = (f"It read the table {len(members)} times, each time with the rows and columns in another order, and "
             "averaged the answers" if len(members) > 1 else "It read the table once")
    if choice is not None and choice.kept < choice.planned:
        again += (f"; it stopped after {choice.kept} of {choice.planned} readings because another one no longer "
                  f"changed its answers for {choice.rows:,} example rows it had set aside to check itself")
    if choice is not None and choice.engine is not None and choice.engine < choice.kept:
        again += (f"; after {choice.engine}, FEAT's own reading had not clearly improved on the classical model on "
                  f"{choice.rows:,} example rows set aside to check, so the later readings fitted only that model")
    said.append(again + ".")
    classes = getattr(est, "classes_", [])
    if len(classes) > 2 and getattr(est, "multiclass", "ovr") == "ovr":
        said.append(f"With {len(classes)} classes, it weighed each class against all the others, then compared.")
    levels = [c for c in est.preprocessor_.plan_ if c.levels]
    for dates, what, example in ((False, "a number", "how large it is (an id, say)"),
                                 (True, "a date", "how late it is (a day many rows share, say)")):
        names = [repr(str(c.name)) for c in levels if bool(c.parts) == dates]
        if names:
            said.append(f"It read {', '.join(names)} both as {what} and as a category: which value a row has says "
                        f"more about the target than {example}.")
    width = len(members[0].features)
    if width < d:
        said.append(f"Each reading took {width} of the {d} features, the ones most related to the target first.")
    if members[0].local is not None:
        said.append(f"Each row was predicted from the {members[0].local.parts.shape[1]:,} example rows most like it.")
    share = classical_share(est)
    if share is not None:
        said.append(share)
        if est.blend_ is not None and est.blend_.weight == 1.0:      # FEAT added nothing: the headline says so
            said.insert(0, said.pop())
    if len(est.preprocessor_.nominal_):
        said.append("Categories were also read through the target's average in each category.")
    return said


def classical_share(est: fe.FEATClassifier | fe.FEATRegressor) -> str | None:
    """How much of the final answer is the classical model's own, in an analyst's words (the blend's weight,
    chosen on example rows set aside to check); None where no classical model was fitted."""
    kinds = {r.stacked.kind for inputs in est.run_inputs_ for r in inputs.values() if r.stacked is not None}
    if not kinds:
        return None
    names = {"trees": "boosted trees", "additive": "a smooth additive model"}
    # the runs (the classes of a multiclass target, each against the rest) may have chosen different kinds
    either = "a classical model (boosted trees or a smooth additive model, whichever did better on rows it had not " \
             "learned from)"
    model = names[next(iter(kinds))] if len(kinds) == 1 else either
    the_model = "the " + model.removeprefix("a ")
    beside = {r.beside.kind for inputs in est.run_inputs_ for r in inputs.values() if r.beside is not None}
    said = f"FEAT also fitted {model} to the example rows and read its prediction as one more column"
    if beside:
        said += f" ({' and '.join(sorted(names.get(k, k) for k in beside))} beside it as another)"
    if est.blend_ is None or est.blend_.weight == 0.0:
        return said + "; the final answer is FEAT's own reading."
    if est.blend_.weight == 1.0 and est.blend_.rows:
        return (f"On {est.blend_.rows:,} example rows set aside to check, FEAT's own reading did not clearly improve "
                f"on {the_model} it fitted beside it, so the final answer is that model's alone.")
    missed = est.blend_.unexplained      # a regression's prior share grows as its classical model misses less
    checked = "" if missed is None else (f" Checked on example rows it had not learned from, that model missed "
                                         f"{missed:.0%} of the variation in the target.")
    if est.blend_.weight == 1.0:
        return (f"FEAT fitted {model} to the example rows and, as that model missed so little, the final answer is "
                f"that model's alone.{checked}")
    if not est.blend_.rows:     # a short table: the prior share, with no rows set aside to choose it
        return said + (f", and mixed {est.blend_.weight:.0%} of that model's own answer into the final one (the share "
                       "it uses when a table is too short to set example rows aside and test the mix"
                       + ("" if missed is None else ": more, the less that model misses") + f").{checked}")
    return said + f", and mixed {est.blend_.weight:.0%} of that model's own answer into the final one."


IMPUTE_METHOD = ("chained: each incomplete column is predicted in context from the other columns "
                 "(classification for categoricals, regression for numbers); dates from the imputation head")


def impute_rows_read(params: dict, n_rows: int, n_cols: int, n_incomplete: int) -> int:
    """The example rows FEAT reads for each of n_incomplete columns of a table of n_rows x n_cols, within the
    imputer's reading budget, which those columns share (`FEATImputer.column_read_plan`)."""
    plan = fe.FEATImputer(**_kwargs(params, None)).column_read_plan(max(n_rows, 2), max(n_cols - 1, 1), n_incomplete)
    return plan.rows


def impute(X: pd.DataFrame, params: dict, progress: Progress | None = None) -> Outcome:
    """FEATImputer().fit_transform(X). value: dict(filled=the filled table (same shape and dtypes),
    confidence=how sure FEAT is of each filled cell, `FEATImputer.transform_with_confidence`)."""
    def go():
        tell = _phase(progress, "filling the empty cells")          # one phase over the columns' one stream
        filled, confidence = fe.FEATImputer(**_kwargs(params, tell)).fit(X).transform_with_confidence(X)
        return {"filled": filled, "confidence": confidence}

    return _call(go)


def confidence_table(filled: pd.DataFrame, mask: pd.DataFrame, confidence: pd.DataFrame, types: dict[str, str],
                     writers: dict | None = None) -> pd.DataFrame:
    """One row per filled cell: its row, column, value and how sure FEAT is of it, in words ("62% likely" for a
    category; "typical error ± 3.1" for a number, that cell's own), least sure first within each column. The
    values are written as their column's known cells are (`numbers.column_format`: a year 2017, a count 1,927, a
    price 80.07), the typical error as a number (money: to the column's decimals); a column the file writes its
    own way ("$1,234", "12%", "Jan 1960"), its value (and a number's error) by its function in `writers`
    (`downloads.value_writers`)."""
    rows = []
    for c in filled.columns:
        at = np.flatnonzero(mask[c].to_numpy()) if c in mask else []
        if not len(at):
            continue
        known = filled[c][~mask[c].reindex(filled.index, fill_value=False).to_numpy(dtype=bool)]
        fmt = column_format(known if len(known) else filled[c], c)
        number = types.get(c) == "numeric" and pd.api.types.is_numeric_dtype(filled[c])
        error_kind = "money" if fmt.kind == "money" else "number"
        decimals = _error_decimals(confidence[c].iloc[at].to_numpy(dtype=float) if c in confidence else [], error_kind,
                                   fmt.decimals)
        write = (writers or {}).get(c)
        for i in at:
            v = confidence[c].iloc[i] if c in confidence else np.nan
            shown = (write or fmt)(filled[c].iloc[i])      # as the table above writes its column
            sure = "" if not np.isfinite(v) else f"{v:.0%} likely" if not number else \
                f"typical error ± {write(float(v)) if write else format_value(float(v), error_kind, decimals)}"
            rows.append({"row": filled.index[i], "column": c, "filled with": shown, "sureness": -v if number else v,
                         "how sure": sure})
    out = pd.DataFrame(rows, columns=["row", "column", "filled with", "sureness", "how sure"])
    return out.sort_values(["column", "sureness"], kind="stable").drop(columns="sureness").reset_index(drop=True)


def _error_decimals(errors, kind: str, money_decimals: int | None = None) -> int | None:
    """The decimals every typical error of one column is written with, so that its rows read alike (a whole-number
    column's errors read "± 1" above "± 0.500"): money's own (`money_decimals`, none for whole amounts); else DIGITS
    significant digits of their median."""
    errors = np.asarray(errors, dtype=float)
    errors = errors[np.isfinite(errors) & (errors > 0)]
    if not len(errors):
        return None
    return (money_decimals or 0) if kind == "money" else max(0, DIGITS - 1 - math.floor(math.log10(np.median(errors))))


# rows the Relations view samples by default: what the engine's relation measures read by default, and what
# docs/benchmarks.md ("Relation discovery") measured them with
RELATION_ROWS = inspect.signature(fe.dependence_matrix).parameters["max_rows"].default
# columns the Relations view relates at most: every pair is measured, and a heatmap labels each at 16 px (60 columns
# of 1,024 rows: FEAT dependence 72 s on two cores in bf16, reading 24 columns a column; 268 s when it read all 59)
RELATION_COLUMNS = 60


def relations(X: pd.DataFrame, target: str | None, params: dict | None = None,
              progress: Progress | None = None) -> Outcome:
    """FEAT's attention, dependence and edge matrices with mutual information, Pearson and Spearman in the
    same labels and order. value: dict("FEAT attention"=, "FEAT dependence"=, "FEAT edges"=, "Mutual
    information"=, Pearson=, Spearman=) of square DataFrames."""
    steps = StepCounter(_phase(progress, f"relating {X.shape[1]} columns"), 3)    # one phase over the three matrices

    def call(fn, progress: Progress | None = None) -> pd.DataFrame:
        kw = _kwargs(params or {}, progress)
        return fn(X, target=target, **{n: v for n, v in kw.items() if n in inspect.signature(fn).parameters})

    def go():
        a = call(fe.relation_matrix, steps.callback("attention"))
        labels = list(a.index)
        return {
            "FEAT attention": a,
            "FEAT dependence": call(fe.dependence_matrix, steps.callback("dependence")).reindex(index=labels, columns=labels),
            "FEAT edges": call(fe.edge_matrix, steps.callback("edges")).reindex(index=labels, columns=labels),
            "Mutual information": call(fe.mutual_information_matrix).reindex(index=labels, columns=labels),
            "Pearson": fe.pearson_matrix(X, target=target).reindex(index=labels, columns=labels),
            "Spearman": fe.spearman_matrix(X, target=target).reindex(index=labels, columns=labels),
        }

    return _call(go)


# --------------------------------------------------------------------------- model info

def model_info(name: str = "small") -> dict:
    """What the sidebar shows of a shipped checkpoint ("small" or "fast": its name, parameters, file size, device,
    card), plus the loaded model, its edge head where it ships with one, and the estimator arguments that make the
    estimators use it."""
    from feat_engine.checkpoint import SHIPPED, edge_head_path, load_edge_head, load_model_and_meta
    from feat_engine.inference import resolve_device
    path = SHIPPED[name]
    model, meta = load_model_and_meta(path)
    n_params = sum(p.numel() for p in model.parameters())
    card = path.parent / "model-card.md"
    card_text = card.read_text(encoding="utf-8", errors="replace") if card.is_file() else None
    heads = edge_head_path(path)
    return {
        "name": str(meta.get("name") or path.stem),
        "params": int(n_params),
        "file_mb": path.stat().st_size / 2**20,
        "path": str(path),
        "device": str(resolve_device("auto")),
        "card": card_text,
        "meta": meta,
        "model": model,
        "edge_head": load_edge_head(heads, path)[0] if heads.is_file() else None,
        "estimator_args": {"checkpoint": model, "max_features": _max_features(meta)},
    }


def analyst_card(info: dict) -> str:
    """The sidebar's model card, for an analyst: what the model is, what it learned from, its limits; the full card
    (training details) is `info["card"]`."""
    meta = info.get("meta") or {}
    seen = meta.get("tables_seen")
    prior = meta.get("prior") or {}
    rows = prior.get("max_rows", 4096) if isinstance(prior, dict) else 4096
    width = _max_features(meta) or 24
    return "\n\n".join([
        "**What it is.** A model that has learned how tables work in general. Given the rows of your table whose "
        "answer is known, it predicts the answer for the other rows in one reading, without training on your "
        "data; the same model fills in empty cells and scores how strongly the columns relate.",
        f"**What it learned from.** {f'{seen:,} tables' if seen else 'Many tables'}: synthetic tables drawn from "
        "random cause-and-effect models, and 1,012 public tables that ship with R packages. None of your data, "
        "and none of the tables it is checked on.",
        f"**Its limits.** It reads numbers, dates and categories; free text and ID columns are left out. It saw "
        f"tables of up to {rows:,} rows and {width} columns while it learned: longer tables are read in parts of "
        f"nearby rows, wider ones in overlapping sets of the most relevant columns. It has {info['params'] / 1e6:.1f} "
        "million parameters, small for a foundation model, and on a laptop's processor it is slower than boosted "
        "trees. It does not know your field: check its scores on rows held out of the context (Predict, "
        "**Evaluate**) before you rely on it.",
        "**A faster version.** Predict also offers feat-fast, a smaller copy of this model taught to give its "
        "answers: about half the work for each example row it reads, at nearly the same scores.",
    ])


def _max_features(meta: dict) -> int | None:
    """The widest table the checkpoint was pretrained on, as the engine reads it from the
    checkpoint's meta (needed because a loaded model carries no meta)."""
    try:
        from feat_engine.checkpoint import trained_max_features
        return int(trained_max_features(meta))
    except Exception:
        return None
