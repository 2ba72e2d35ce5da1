"""Small shared helpers: device choice, seeding, the quick/full scale knob, atomic writes, and input checks.

Every experiment in the book takes a ``scale`` ("quick" or "full"). It is read from one place,
:func:`resolve_scale`, so CI and readers on a CPU run in seconds and Colab GPUs run the full size.
The checks at the bottom raise ``ValueError`` at the boundary of the public API with a message that
names the value, the expected form and the fix (see the design notes, "Errors").
"""

from __future__ import annotations

import contextlib
import math
import os
import random
from statistics import NormalDist

import numpy as np
import torch

SCALES = ("quick", "full")


def get_device(device: str | torch.device | None = None) -> torch.device:
    """The device to run on: the one asked for, else (``None`` or ``"auto"``) cuda, then mps, then cpu."""
    if device is not None and device != "auto":
        return torch.device(device)
    if torch.cuda.is_available():
        return torch.device("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def explained_variance(values: torch.Tensor, returns: torch.Tensor, mask: torch.Tensor) -> float:
    """1 - Var(R - V) / Var(R) over the steps where ``mask`` is set: 1 = a perfect critic, 0 = no better
    than a constant; NaN with fewer than 2 steps or Var(R) = 0."""
    m = mask.bool()
    y, v = returns[m], values[m]
    var_y = y.var() if y.numel() > 1 else torch.tensor(float("nan"))
    return float("nan") if not var_y > 0 else float(1 - (y - v).var() / var_y)


def write_atomic(path: str, write) -> None:
    """``write(tmp)`` into a temporary file beside ``path``, then rename it to ``path``: a crash or a failed
    write (a full disk) never leaves half a file, and a failed or interrupted write removes the temporary
    file. The temporary name is ``PATH.tmpPID``."""
    tmp = f"{os.fspath(path)}.tmp{os.getpid()}"
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


def seed_everything(seed: int) -> torch.Generator:
    """Seed Python, NumPy and torch; return a torch CPU generator seeded the same way."""
    if not isinstance(seed, int | np.integer):
        raise ValueError(f"seed must be an integer, got {seed!r}; pass e.g. seed=0")
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed)


def resolve_scale(scale: str | None = None) -> str:
    """Return "quick" or "full".

    An explicit ``scale`` wins. Otherwise the environment variable ``RLTUTOR_QUICK`` decides
    ("1"/"true" -> quick, "0"/"false" -> full). If it is unset: quick, whatever the hardware (a run's
    size never depends silently on whether a GPU is present; ask for "full" to get it).
    """
    if scale is not None:
        if scale not in SCALES:
            raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
        return scale
    env = os.environ.get("RLTUTOR_QUICK")
    if env is not None and env.strip() != "":
        v = env.strip().lower()
        if v in ("1", "true", "yes", "on"):
            return "quick"
        if v in ("0", "false", "no", "off"):
            return "full"
        raise ValueError(f"RLTUTOR_QUICK must be 1 or 0, got {env!r}")
    return "quick"


def scale_banner(scale: str | None = None) -> str:
    """The line each notebook prints first: which scale it runs at and how to change it."""
    s = resolve_scale(scale)
    other = "RLTUTOR_QUICK=0 (full scale: use a GPU)" if s == "quick" else "RLTUTOR_QUICK=1 (quick scale)"
    return f"Scale: {s}. Set {other} before starting Jupyter to change it."


# Two-sided 95% quantiles of Student's t, t_{0.975, df}, for df = 1..30 (standard tables).
_T975 = [
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
]


def t_quantile(n: int, level: float = 0.95) -> float:
    """Two-sided quantile for a mean of ``n`` samples: Student's t at level 0.95 (df = n - 1 <= 30),
    the normal quantile otherwise (a close approximation for df > 30)."""
    if n < 2:
        raise ValueError(f"a confidence interval needs at least 2 samples, got n={n}")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}; e.g. 0.95")
    if math.isclose(level, 0.95) and n - 1 <= len(_T975):
        return _T975[n - 2]
    return NormalDist().inv_cdf(0.5 + level / 2)


# ----------------------------------------------------------------------------------------------
# Input checks shared by the math core and the trainer.
# ----------------------------------------------------------------------------------------------


def check_tensor(name: str, x, ndim: int | None = None) -> torch.Tensor:
    """``x`` must be a floating or integer torch tensor without NaN/inf (and of ``ndim`` dims)."""
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(x).__name__}; wrap it with torch.as_tensor")
    if ndim is not None and x.dim() != ndim:
        raise ValueError(f"{name} must have {ndim} dims, got shape {tuple(x.shape)}")
    # One float64 reduction finds any NaN/inf (they propagate into the sum, and float64 cannot
    # overflow from float32 entries); only on suspicion is the exact, slower check run.
    if x.is_floating_point() and not torch.isfinite(x.detach().sum(dtype=torch.float64)):
        bad = ~torch.isfinite(x.detach())
        if bad.any():
            raise ValueError(
                f"{name} contains NaN or inf (first at index {bad.nonzero()[0].tolist()}); "
                "check the upstream computation"
            )
    return x


def check_mask(mask, like: torch.Tensor | None = None, name: str = "mask") -> torch.Tensor:
    """A mask must be 0/1 (bool, int or float) and, if ``like`` is given, of its shape."""
    if not isinstance(mask, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor of 0/1, got {type(mask).__name__}")
    if like is not None and mask.shape != like.shape:
        raise ValueError(
            f"{name} has shape {tuple(mask.shape)} but the values have shape {tuple(like.shape)}; "
            "they must match (B, T)"
        )
    # A 0/1 mask survives the round trip through bool unchanged; NaN, 2 or 0.5 do not.
    if mask.dtype != torch.bool and not torch.equal(mask, mask.bool().to(mask.dtype)):
        bad = mask[(mask != 0) & (mask != 1)].flatten()[:3].tolist()
        raise ValueError(f"{name} must hold only 0 and 1, found values such as {bad}")
    return mask


def check_same_shape(**tensors: torch.Tensor) -> None:
    """All given tensors must have the same shape."""
    items = list(tensors.items())
    n0, t0 = items[0]
    for n, t in items[1:]:
        if t.shape != t0.shape:
            raise ValueError(f"{n} has shape {tuple(t.shape)} but {n0} has shape {tuple(t0.shape)}; they must match")


def register_in(table: dict, name: str, kind: str):
    """A decorator that adds a function to the registry ``table`` under ``name``. Registering a name
    twice is an error, so a new entry cannot silently replace a built-in one; ``kind`` names the
    entry in the message (e.g. "a policy loss named"). Look names up with :func:`check_choice`."""

    def deco(fn):
        if name in table:
            raise ValueError(f"{kind} {name!r} is already registered")
        table[name] = fn
        return fn

    return deco


def check_choice(name: str, value: str, valid) -> str:
    """``value`` must be one of ``valid``; the message lists them."""
    if value not in valid:
        raise ValueError(f"unknown {name} {value!r}; valid: {', '.join(sorted(valid))}")
    return value


def check_int(name: str, value, low: int | None = 1, high: int | None = None, why: str = "") -> int:
    """``value`` must be an int (not a bool) in [``low``, ``high``]; the message names the field, the range
    and, for the upper bound, ``why`` it exists."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if low is not None and value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    if high is not None and value > high:
        lo = "" if low is None else f"{low} <= "
        raise ValueError(f"{name} must be an integer {lo}{name} <= {high:,}, got {value!r}{'; ' + why if why else ''}")
    return int(value)


def check_same_dtype(**tensors: torch.Tensor) -> None:
    """All given tensors must have one dtype: mixed dtypes would give results of two dtypes (and, in
    float16, overflow where the other would not), so refuse rather than guess."""
    (n0, first), *rest = tensors.items()
    for name, t in rest:
        if t.dtype != first.dtype:
            raise ValueError(
                f"{name} has dtype {t.dtype} but {n0} has dtype {first.dtype}; give them one "
                f"dtype, e.g. {name}.to({n0}.dtype)"
            )


def check_number(
    name: str,
    value,
    low: float | None = None,
    high: float | None = None,
    *,
    low_open: bool = False,
    none_ok: bool = False,
) -> float:
    """``value`` must be a finite real number (not a bool) in [low, high] (or (low, high] with ``low_open``)."""
    if value is None and none_ok:
        return value
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise ValueError(f"{name} must be a number, got {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    lo_bad = low is not None and (value <= low if low_open else value < low)
    if lo_bad or (high is not None and value > high):
        lo = "-inf" if low is None else f"{low:g}"
        hi = "inf" if high is None else f"{high:g}"
        rng = f"{'(' if low_open else '['}{lo}, {hi}{']' if high is not None else ')'}"
        off = " or None to switch it off" if none_ok else ""
        raise ValueError(f"{name} must lie in {rng}{off}, got {value!r}")
    return float(value)


DEVICES = ("auto", "cpu", "cuda", "mps")


def check_device(device: str) -> str:
    """A device setting: "auto" (cuda, then mps, then cpu), "cpu", "cuda", "cuda:N" or "mps"."""
    base = device.split(":", 1)[0] if isinstance(device, str) else None
    if base not in DEVICES or (":" in device and (base != "cuda" or not device.split(":", 1)[1].isdigit())):
        raise ValueError(f"unknown device {device!r}; valid: auto, cpu, cuda, cuda:N, mps")
    return device


def machine_info() -> str:
    """The processor, PyTorch's CPU kernel level and versions: printed with every benchmark table.

    PyTorch picks CPU kernels by processor (AVX-512, AVX2, the default), float rounding then differs,
    so a seeded run is reproducible on one machine, not across processors; and timings depend on it.
    """
    import platform

    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            model = next((line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")), model)
    except OSError:
        pass
    return (
        f"CPU: {model}; torch {torch.__version__}, CPU kernel level "
        f"{torch.backends.cpu.get_cpu_capability()}; {os.cpu_count()} logical CPUs"
    )
