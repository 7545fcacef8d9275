"""The fitted classifier's and regressor's `reading_`: how its members read the table, in one technical sentence."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..reading.quantile_transform import reads_quantiles

if TYPE_CHECKING:
    from .in_context import InContextBase


def describe_reading(est: InContextBase) -> str:
    """One sentence on how a fitted estimator's members read its table (`reading_`; the app's Predict view shows it)."""
    n, d = est.context_.shape
    names = [est.preprocessor_.feature_names_[j] for j in est.preprocessor_.nominal_]
    width = len(est.members_[0].features)
    n_quantile = sum(reads_quantiles(m) for m in est.members_)
    power = any(r.target is not None for inputs in est.run_inputs_ for r in inputs.values())
    parts = [f"{len(est.members_)} member(s)"
             + (f", {n_quantile} reading numbers in the quantile view" if n_quantile else "")
             + (" and the target on a power scale" if power else ""),
             f"target statistics for {len(names)} nominal column(s) ({', '.join(names[:5])}"
             f"{', ...' if len(names) > 5 else ''})" if names else "no nominal columns",
             f"{width} of {d} features per member, most relevant first" if width < d else f"all {d} features"]
    levels = [str(c.name) for c in est.preprocessor_.plan_ if c.levels]
    if levels:
        parts.append(f"whole numbers or dates read both as such and as categories, their values telling more "
                     f"about the target than their order: {', '.join(levels[:5])}"
                     f"{', ...' if len(levels) > 5 else ''}")
    stacked = {id(r.stacked.model): r.stacked for inputs in est.run_inputs_ for r in inputs.values()
               if r.stacked is not None}
    kinds = [v.kind for v in stacked.values()]
    if kinds:
        n_trees = kinds.count("trees")
        beside = any(r.beside is not None for inputs in est.run_inputs_ for r in inputs.values())
        parts.append(f"a cross-fitted model's prediction as one more feature (boosted trees for {n_trees} of "
                     f"{len(kinds)} fitted views, the additive model for {len(kinds) - n_trees})"
                     + (", and the other kind's as another" if beside else ""))
    local = est.members_[0].local
    rows = len(est.members_[0].rows)
    parts.append(f"each query reads the nearest of {len(local.parts)} local parts of {local.parts.shape[1]:,} "
                 f"rows out of {rows:,} context rows" if local is not None else f"the whole context of {rows:,} rows")
    if est.read_plan_.capped:
        parts.append(est.read_plan_.describe(n))
    if est.reading_choice_ is not None:
        parts.append(f"that reading {est.reading_choice_.describe()}")
    if est.member_choice_ is not None:
        parts.append(est.member_choice_.describe())
    if est.blend_ is not None:
        parts.append(est.blend_.describe())
    return "; ".join(parts) + "."
