"""The normal and Student-t distributions without scipy: tail probabilities and quantiles accurate
far into the tail (p = 1e-9 at df = 5), where the gate's family-wise levels live. The tests check
them against scipy."""

import math
from functools import lru_cache
from typing import Optional

#: Above this many degrees of freedom a t quantile is the normal one.
DF_NORMAL = 1e5


def norm_cdf(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def norm_sf(x: float) -> float:
    """P(Z > x), accurate far into the tail."""
    return 0.5 * math.erfc(x / math.sqrt(2.0))


def norm_ppf(p: float) -> float:
    """Inverse of the standard normal CDF (Acklam's rational approximation, refined by Newton)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"probability {p} outside (0, 1)")
    a = (-3.969683028665376e01, 2.209460984245205e02, -2.759285104469687e02,
         1.383577518672690e02, -3.066479806614716e01, 2.506628277459239e00)
    b = (-5.447609879822406e01, 1.615858368580409e02, -1.556989798598866e02,
         6.680131188771972e01, -1.328068155288572e01)
    c = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e00,
         -2.549732539343734e00, 4.374664141464968e00, 2.938163982698783e00)
    d = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e00, 3.754408661907416e00)
    lo = 0.02425
    if p < lo:
        q = math.sqrt(-2 * math.log(p))
        x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / \
            ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1)
    elif p > 1 - lo:
        q = math.sqrt(-2 * math.log(1 - p))
        x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / \
            ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1)
    else:
        q = p - 0.5
        r = q * q
        x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q / \
            (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)
    e = norm_cdf(x) - p
    u = e * math.sqrt(2 * math.pi) * math.exp(x * x / 2)
    return x - u / (1 + x * u / 2)


def norm_isf(p: float) -> float:
    """The z with P(Z > z) = p, accurate for tiny p (1e-12 keeps its digits)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"probability {p} outside (0, 1)")
    if p > 0.5:
        return -norm_isf(1.0 - p)
    x = -norm_ppf(p)
    for _ in range(3):  # Newton on log P(Z > x): well conditioned in the far tail
        sf = norm_sf(x)
        if sf <= 0:
            break
        pdf = math.exp(-x * x / 2) / math.sqrt(2 * math.pi)
        x += (sf - p) / pdf
    return x


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    ln = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
          + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return math.exp(ln) * _betacf(a, b, x) / a
    return 1.0 - math.exp(ln) * _betacf(b, a, 1.0 - x) / b


def t_sf(x: float, df: Optional[float]) -> float:
    """P(T > x) for Student's t with ``df`` degrees of freedom (None or inf: the normal)."""
    if df is None or df <= 0 or df > DF_NORMAL or math.isinf(df):
        return norm_sf(x)
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + x * x))
    return tail if x >= 0 else 1.0 - tail


def _t_pdf(x: float, df: float) -> float:
    ln = (math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
          - (df + 1) / 2 * math.log1p(x * x / df))
    return math.exp(ln)


@lru_cache(maxsize=65536)
def _t_isf(p: float, df: float) -> float:
    x = norm_isf(p)
    z = x
    # Cornish-Fisher start, then Newton on the exact tail
    g1 = (z ** 3 + z) / 4
    g2 = (5 * z ** 5 + 16 * z ** 3 + 3 * z) / 96
    x = z + g1 / df + g2 / df ** 2
    for _ in range(60):
        sf = t_sf(x, df)
        pdf = _t_pdf(x, df)
        if pdf <= 0:
            break
        # Newton in log space: the tail spans many orders of magnitude
        step = (math.log(sf) - math.log(p)) * sf / pdf
        step = max(min(step, 0.5 * abs(x) + 1.0), -0.5 * abs(x) - 1.0)
        x += step
        if abs(step) < 1e-10 * max(1.0, abs(x)):
            break
    return x


def t_isf(p: float, df: Optional[float]) -> float:
    """The t with P(T > t) = p for ``df`` degrees of freedom (None or inf: the normal quantile).
    Accurate far into the tail (p = 1e-9 at df = 5), where the gate's family-wise levels live."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"probability {p} outside (0, 1)")
    if df is None or df <= 0 or df > DF_NORMAL or math.isinf(df):
        return norm_isf(p)
    if p > 0.5:
        return -t_isf(1.0 - p, df)
    # 4 significant digits of p and 0.1 of df: boundaries move by far less than their own error
    return _t_isf(float(f"{p:.4g}"), round(max(float(df), 1.0), 1))


def t_ppf(p: float, df: Optional[float]) -> float:
    """Student-t quantile: the t with P(T <= t) = p."""
    return -t_isf(p, df)
