"""A regression target on a power scale, for the members that read the quantile view (`quantile_transform.py`): a
Yeo-Johnson transform (scikit-learn's `PowerTransformer`) fitted on the context, in units of the target's median
absolute value, its lambda kept in [0, 1] (at most as strong as a log). Predictions map back as means (Duan's smearing
over the residuals of the member's stacked model, `stacked_model.py`; without one, the plain inverse), and a query's
value still depends on that query alone. A target one of whose values holds at least POINT_MASS of the context's
targets (a count that is mostly 0) is read as it is (docs/decisions/0020-power-target.md)."""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
from sklearn.preprocessing import PowerTransformer

N_RESIDUALS = 64     # residual quantiles the smearing averages over
POINT_MASS = 0.5     # share of the context's targets one value holds, from which no power scale is read


def reads_power(y: np.ndarray) -> bool:
    """Whether the context targets y are read on a power scale: not where one value holds POINT_MASS of them, which
    no power transform spreads (docs/decisions/0020-power-target.md)."""
    counts = np.unique(np.asarray(y), return_counts=True)[1]
    return len(counts) > 0 and counts.max() < POINT_MASS * len(y)


@dataclass
class PowerTarget:
    """The power scale z = T(y) of a context's targets y, given in the estimator's standardised units
    (y = (target - origin) / scale: T reads the target's own values)."""

    transformer: PowerTransformer    # Yeo-Johnson on target / unit, lambda in [0, 1], not standardised
    origin: float
    scale: float
    unit: float                      # median |target| of the context (1 where that is 0)
    mean: float                      # statistics of T on the context, so that z is standardised ...
    std: float
    lo: float                        # ... and the context's range of z
    hi: float
    residuals: np.ndarray = field(default_factory=lambda: np.zeros(1))   # (R,) residual quantiles in z (0: none)

    def _t(self, y: np.ndarray) -> np.ndarray:
        target = np.asarray(y, np.float64).reshape(-1, 1) * self.scale + self.origin
        return self.transformer.transform(target / self.unit)[:, 0]

    def forward(self, y: np.ndarray) -> np.ndarray:
        """(N,) targets y on the standardised power scale."""
        return ((self._t(y) - self.mean) / self.std).astype(np.float32)

    def mean_of(self, z: np.ndarray) -> np.ndarray:
        """(M,) the targets' means (standardised units) for predictions z on the power scale: T^-1(z + r),
        z + r clipped to the context's range, averaged over the residuals r."""
        zr = np.clip(np.asarray(z, np.float64)[:, None] + self.residuals[None, :], self.lo, self.hi)
        t = (zr * self.std + self.mean).reshape(-1, 1)
        target = self.transformer.inverse_transform(t).reshape(zr.shape) * self.unit
        return (target.mean(axis=1) - self.origin) / self.scale

    def with_residuals(self, residuals: np.ndarray) -> PowerTarget:
        """This transform, smearing over N_RESIDUALS quantiles of `residuals` (the context's targets on the
        power scale less their out-of-fold predictions)."""
        r = np.asarray(residuals, np.float64)
        r = r[np.isfinite(r)]
        q = np.quantile(r, (np.arange(N_RESIDUALS) + 0.5) / N_RESIDUALS) if len(r) else np.zeros(1)
        return replace(self, residuals=q)


def fit_power_target(y: np.ndarray, origin: float = 0.0, scale: float = 1.0) -> PowerTarget:
    """The power scale of the context targets y = (target - origin) / scale, no residuals yet (the plain inverse)."""
    target = np.asarray(y, np.float64).reshape(-1, 1) * scale + origin
    unit = float(np.median(np.abs(target)))
    unit = unit if unit > 0 else 1.0
    pt = PowerTransformer(method="yeo-johnson", standardize=False).fit(target / unit)
    pt.lambdas_ = np.clip(pt.lambdas_, 0.0, 1.0)
    t = pt.transform(target / unit)[:, 0]
    mean, std = float(t.mean()), float(t.std())
    std = std if std > 0 else 1.0
    return PowerTarget(pt, origin, scale, unit, mean, std, float((t.min() - mean) / std), float((t.max() - mean) / std))
