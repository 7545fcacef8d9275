"""Reading a table: the stages that turn a preprocessed context (`feat_engine.preprocess`) into what each engine
run reads. None of them imports torch (tests/test_layout.py keeps it so); the estimators run them, the engine
never sees them.

`fit` runs them in this order (`estimators/in_context.py`):

0. `coded_levels.py`    whole-number and date columns whose levels tell more about the target than their order
                        (a unit's id, a day many rows share), read a second time as nominal levels.
1. `context_size.py`    with `local_context="auto"`: parts of 512, of 1,024 or the whole context, chosen on
                        held-out context rows.
2. `relevance.py`       the mutual information of each feature with the target, where a table is wider than a
                        run reads or its context is long enough to split.
3. `members.py`         the ensemble: each member's rows, features (the most relevant first on wide tables) and
                        column-identity seed.
4. `local_parts.py`     on long contexts, each member's rows split into overlapping local parts (MiniBatchKMeans
                        centres), and the rule that routes a query to the part nearest to it.
5. `blend.py`           where a blend is read, context rows held out of the parts for it (`held_out_rows`).
6. `run_inputs.py`      per member and labelling, what its runs read beside the features:
   - `target_stats.py`  cross-fitted target statistics for nominal columns (TargetEncoder);
   - `stacked_model.py` a cross-fitted classical model (additive or boosted trees) whose prediction is one more
                        feature;
   - `power_target.py`  the target on a power scale, for the members that read the quantile transform.
7. `blend.py`           the weight of the stacked model's own prediction in a blend with the engine's output,
                        chosen on the held-out rows (where none are held out, PRIOR_WEIGHT, or a regression's
                        band of PRIOR_BANDS by how much its stacked models miss out of fold).

`predict` routes each query row to its member's part (`local_parts.py`), applies the fitted statistics and
stacked model to it (`run_inputs.py`), reads numbers through their context quantiles for half of the members
(`quantile_transform.py`), and blends the engine's output (`blend.py`). The measurements behind each stage are
in docs/decisions/ (0012-0026; docs/decisions/README.md lists them).
"""
