"""PyTorch's grid resizes, written out in float64 NumPy (imported by the DINOv2 and BEiT tools; not
a program).

transformers resizes position tables with torch.nn.functional.interpolate; a C engine has to do
the same arithmetic, so each mode is written here from the ATen kernels' rules (UpSample.h,
UpSampleKernel.cpp of PyTorch 1.13, unchanged in 2.x for floating point) and checked against
F.interpolate by check(). docs/SPEC.md §11 and §12 say the same in prose.

All three work on one axis at a time (the 2-D resize is separable: rows, then columns) and on a
grid [C, h, w] -> [C, H, W]. `scale` is the source step per output sample: in / out when
interpolate() is given a size, 1 / scale_factor when it is given a scale factor (the legacy
DINOv2 path, see dinov2_reference.py).

  bicubic      mode="bicubic", align_corners=False, antialias=False: Keys' cubic with A = -0.75,
               source x = (i + 0.5) * scale - 0.5, taps floor(x) - 1 .. floor(x) + 2 clamped to
               the edge, weights from t = x - floor(x) (never renormalised)
  bicubic_aa   mode="bicubic", antialias=True: Pillow-style separable filter with a = -0.5;
               support 2 * max(scale, 1); centre c = (i + 0.5) * scale; taps
               xmin = max(trunc(c - support + 0.5), 0) .. min(trunc(c + support + 0.5), in) - 1,
               weight filter((x - c + 0.5) / max(scale, 1)), divided by their sum (so taps
               outside the grid are dropped, not clamped)
  bilinear     mode="bilinear", align_corners=False: x = max((i + 0.5) * scale - 0.5, 0),
               x0 = trunc(x), x1 = min(x0 + 1, in - 1), weights 1 - t and t with t = x - x0
"""
import math

import numpy as np
import torch
import torch.nn.functional as F


def _cubic(t, A=-0.75):
    """The four Keys weights for taps at -1, 0, 1, 2 of a sample at fraction t in [0, 1)."""
    def near(x):  # |x| <= 1
        return ((A + 2) * x - (A + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _aa_filter(x, a=-0.5):
    x = abs(x)
    if x < 1:
        return ((a + 2) * x - (a + 3)) * x * x + 1
    if x < 2:
        return (((x - 5) * x + 8) * x - 4) * a
    return 0.0


def axis_matrix(n_in, n_out, mode, scale=None):
    """The [n_out, n_in] matrix of one axis's resize: out = M @ in."""
    s = n_in / n_out if scale is None else scale
    M = np.zeros((n_out, n_in))
    for i in range(n_out):
        if mode == "bicubic":
            x = (i + 0.5) * s - 0.5
            x0 = math.floor(x)
            for k, w in zip(range(-1, 3), _cubic(x - x0)):
                M[i, min(max(x0 + k, 0), n_in - 1)] += w
        elif mode == "bicubic_aa":
            support = 2.0 * max(s, 1.0)
            inv = 1.0 / s if s >= 1.0 else 1.0
            c = s * (i + 0.5)
            lo, hi = max(int(c - support + 0.5), 0), min(int(c + support + 0.5), n_in)
            w = np.array([_aa_filter((x - c + 0.5) * inv) for x in range(lo, hi)])
            if w.sum() != 0:
                w = w / w.sum()
            M[i, lo:hi] = w
        elif mode == "bilinear":
            x = max((i + 0.5) * s - 0.5, 0.0)
            x0 = int(x)
            x1 = min(x0 + 1, n_in - 1)
            t = x - x0
            M[i, x0] += 1 - t
            M[i, x1] += t
        else:
            raise ValueError(mode)
    return M


def resize(grid, out_h, out_w, mode, scale_h=None, scale_w=None):
    """grid [C, h, w] (float64 array or tensor) -> float64 array [C, out_h, out_w]."""
    g = grid.detach().double().numpy() if isinstance(grid, torch.Tensor) else np.asarray(grid)
    Mh = axis_matrix(g.shape[1], out_h, mode, scale_h)
    Mw = axis_matrix(g.shape[2], out_w, mode, scale_w)
    return np.einsum("ij,cjk,lk->cil", Mh, g, Mw)


def torch_resize(grid, out_h, out_w, mode, scale_factor=None):
    """The same through F.interpolate (the call transformers makes), in grid's dtype."""
    t = torch.as_tensor(grid)[None]
    if mode == "bilinear":
        return F.interpolate(t, size=(out_h, out_w), mode="bilinear", align_corners=False)[0]
    aa = mode == "bicubic_aa"
    if scale_factor is not None:
        out = F.interpolate(t, scale_factor=scale_factor, mode="bicubic", align_corners=False,
                            antialias=aa)
        assert out.shape[-2:] == (out_h, out_w), (out.shape, out_h, out_w)
        return out[0]
    return F.interpolate(t, size=(out_h, out_w), mode="bicubic", align_corners=False,
                         antialias=aa)[0]


def check():
    """Every mode against F.interpolate on random float64 grids, up and down, within 1e-12;
    the legacy scale-factor path too. Returns the worst difference."""
    g = torch.Generator().manual_seed(5)
    worst = 0.0
    for n, m in [(2, 3), (3, 2), (3, 4), (4, 3), (4, 5), (4, 7), (5, 3), (7, 11), (7, 5), (37, 16),
                 (16, 37), (1, 3), (3, 1)]:
        x = torch.randn(3, n, n, generator=g, dtype=torch.float64)
        for mode in ("bicubic", "bicubic_aa", "bilinear"):
            d = np.abs(resize(x, m, m, mode) - torch_resize(x, m, m, mode).numpy()).max()
            assert d < 1e-12, (mode, n, m, d)
            worst = max(worst, d)
        sf = (m + 0.1) / n
        want = torch_resize(x, m, m, "bicubic", scale_factor=(sf, sf)).numpy()
        d = np.abs(resize(x, m, m, "bicubic", 1 / sf, 1 / sf) - want).max()
        assert d < 1e-12, ("legacy", n, m, d)
        worst = max(worst, d)
    return worst
