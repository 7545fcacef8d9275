"""Frozen configuration dataclasses: the model, the prior, training and inference."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, TypeVar

C = TypeVar("C", bound="_Serialised")


class _Serialised:
    """A config that goes to and from a plain dict (a checkpoint's meta, a YAML file)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls: type[C], d: dict[str, Any]) -> C:
        """Build the config from a dict, ignoring unknown keys and turning lists into tuples."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: (tuple(v) if isinstance(v, list) else v) for k, v in d.items() if k in names})


@dataclass(frozen=True)
class ModelConfig(_Serialised):
    """Shape of the FEAT network (paper section 4)."""

    d_model: int = 128            # d: width of every cell token
    n_blocks: int = 4             # L: dual-axis blocks
    schedule: tuple[str, ...] = ("afbm", "afbm", "afbm", "gla")  # sample-axis mixer per block, repeated
    attn_heads: int = 4           # feature-axis MHSA heads
    attn_dim: int = 0             # feature-axis width of queries, keys and values (0: d); head dim = attn_dim / attn_heads
    ffn_mult: int = 2             # feature-axis FFN hidden = ffn_mult * d
    d_state: int = 16             # Mamba-2 state size N
    ssm_heads: int = 4            # Mamba-2 heads; head dim = expand * d / ssm_heads
    expand: float = 1             # Mamba-2 inner width = expand * d
    chunk_size: int = 16          # SSD chunk length Q
    conv_kernel: int = 5          # Conv-GLA depthwise kernel K
    gla_heads: int = 4            # Conv-GLA heads
    max_classes: int = 10         # classification head size
    d_hidden: int = 128           # hidden width of the prediction heads
    dfe_rank: int = 32            # S-DFE identity rank (d/4 in the paper)
    slow_heads: float = 0.5       # share of AFBM heads initialised with a horizon of 500-10,000 rows

    def mixer(self, block: int) -> str:
        """Sample-axis mixer of block `block` ('afbm' or 'gla')."""
        return self.schedule[block % len(self.schedule)]


@dataclass(frozen=True)
class InferenceConfig:
    """Memory and precision knobs of the inference runner; none of them changes the maths."""

    # rows per feature-axis chunk: a run of 8,192 context rows x 20 features took 0.82 (bf16) and 0.70 (fp32) of its
    # time with 1,024 against 8,192, the same numbers to the bit (docs/decisions/0041-cpu-scan-kernel.md)
    row_chunk: int = 1024
    col_chunk: int = 4            # columns per sample-axis chunk
    query_chunk: int = 4096       # query rows per streamed pass
    autocast_bf16: bool = False   # bf16 matmuls (fp32 scan states)
    # on a CPU, at most this many tokens (rows x columns x tables) per feature-axis chunk and per query pass, so that
    # a chunk's intermediates stay in the cache (the query-key-value product: 6 MiB in fp32) and none outgrows
    # glibc's 32 MiB mmap threshold; `inference.chunk_rows` (docs/decisions/0005-memory-bounded-inference.md)
    cpu_chunk_tokens: int = 4096
    # on a CPU, the sample-axis mixers take at most this many tokens (rows x tables x columns; one column at least)
    # at once: their intermediates (a 292-wide projection, both streams) then stay in the caches
    # (docs/decisions/0041-cpu-scan-kernel.md)
    cpu_mixer_tokens: int = 1024


@dataclass(frozen=True)
class PriorConfig(_Serialised):
    """Ranges of the hybrid SCM prior (paper section 4.5.1) and the real-table mix."""

    min_rows: int = 64            # rows per table (context and query together)
    max_rows: int = 512
    min_features: int = 1         # features per table
    max_features: int = 24
    min_ctx_frac: float = 0.3     # share of a table's rows that are context
    max_ctx_frac: float = 0.9
    min_query: int = 16           # query rows per table at least
    p_classification: float = 0.6
    max_classes: int = 10
    p_binary: float = 0.5         # share of classification tables with two classes
    p_categorical_table: float = 0.3
    p_missing_table: float = 0.5
    p_additive: float = 0.0       # share of tables with an additive (GAM) teacher over the observed features
    p_linear: float = 0.0         # ... with a dense linear teacher over the observed features
    p_tree: float = 0.0           # ... with a sum of random oblivious trees over the observed features
    p_nominal: float = 0.0        # share of synthetic tables with a many-level nominal column that moves the target
    p_local: float = 0.0          # share of synthetic tables that are a local part of a 4x larger one
    max_local_pool: int = 4       # ... or of one up to this many times larger (batches.LOCAL_POOL_ROWS rows at most)
    p_quantile: float = 0.0       # share of supervised batches in the quantile view (reading/quantile_transform.py)
    p_view: float = 0.0           # ... with the additive stacked model as first column (reading/stacked_model.py)
    p_wide: float = 0.0           # share of supervised batches whose synthetic tables are cut to the width by relevance
    max_wide_features: int = 64   # features a wide table is drawn with, at most
    max_missing_rate: float = 0.3
    mask_rate: tuple[float, float] = (0.05, 0.2)   # reconstruction masks on query rows
    p_impute_only: float = 0.1                      # batches where all rows are context and unlabelled
    p_real: float = 0.3                             # fraction of batches from allowlisted real tables
    mask_mix: tuple[float, float, float] = (0.5, 0.3, 0.2)  # cell / stripe / block


@dataclass(frozen=True)
class TrainConfig(_Serialised):
    """Pretraining loop settings."""

    model: ModelConfig = field(default_factory=ModelConfig)
    prior: PriorConfig = field(default_factory=PriorConfig)
    batch_tokens: int = 49152      # cells a batch holds, about: tables = batch_tokens // (rows x (features + 1)), 1-64
    lr: float = 1.5e-3
    weight_decay: float = 0.0
    warmup_steps: int = 200
    clip: float = 1.0
    huber_delta: float = 1.0
    bf16: bool = True              # bf16 autocast on a GPU, or where the CPU multiplies bf16 natively (else fp32)
    device: str = "auto"           # "cpu", "cuda" or "auto" (a GPU where there is one)
    seed: int = 0
    workers: int = 1
    checkpoint_minutes: float = 5.0
    eval_minutes: float = 15.0
    out_dir: str = "runs/pretrain"
    max_steps: int = 10**9
    threads: int = 0               # torch intra-op threads (0: torch default)
    slow_down_init: bool = False   # --init-from: give model.slow_heads of each AFBM's heads slow decay (AFBM.slow_down)
    teacher: str = ""              # a checkpoint to distil from (train/distill.py); a fresh run starts from it, pruned
    distill_weight: float = 1.0    # weight of the distillation loss beside the loss on the prior's own targets

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "TrainConfig":
        d = dict(d)
        model = ModelConfig.from_dict(d.pop("model", {}) or {})
        prior = PriorConfig.from_dict(d.pop("prior", {}) or {})
        base = super().from_dict(d)
        return cls(**{**{f.name: getattr(base, f.name) for f in fields(cls)}, "model": model, "prior": prior})
