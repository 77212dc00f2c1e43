"""The two-dimensional point-cloud separation data of Sect. 3.4.1 of the review."""

from __future__ import annotations

import math

import torch

from .. import _checks as check

__all__ = ["point_cloud"]


def _uniform_annulus(
    n: int, r_min: float, r_max: float, generator: torch.Generator
) -> torch.Tensor:
    # uniform in area: r = sqrt(U (r_max^2 - r_min^2) + r_min^2)
    u = torch.rand(n, generator=generator, dtype=torch.float64, device=generator.device)
    r = torch.sqrt(u * (r_max**2 - r_min**2) + r_min**2)
    theta = (
        2
        * math.pi
        * torch.rand(n, generator=generator, dtype=torch.float64, device=generator.device)
    )
    return torch.stack([r * torch.cos(theta), r * torch.sin(theta)], dim=1).float()


def point_cloud(
    n_inner: int = 40,
    n_outer: int = 80,
    *,
    inner_radius: float = 0.5,
    outer_radii: tuple[float, float] = (0.85, 1.0),
    seed: int = 0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``n_inner`` points uniform in ``|r| < inner_radius`` (label 0) and ``n_outer`` uniform in
    the annulus ``outer_radii`` (label 1); the review uses 40 and 80 points, radii 0.5 and (0.85,
    1.0)."""
    check.real(inner_radius, "inner_radius", low=0.0, low_open=True)
    if not isinstance(outer_radii, (tuple, list)) or len(outer_radii) != 2:
        raise ValueError(f"outer_radii must be a pair (r_min, r_max), got {outer_radii!r}")
    for r in outer_radii:
        check.real(r, "outer_radii")
    check.integer(seed, "seed", 0)
    if not (0 < inner_radius < outer_radii[0] < outer_radii[1]):
        raise ValueError(
            f"need 0 < inner_radius < outer_radii[0] < outer_radii[1], got {inner_radius}, "
            f"{outer_radii}"
        )
    for name, n in (("n_inner", n_inner), ("n_outer", n_outer)):
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"{name} must be a positive integer, got {n!r}")
    g = torch.Generator().manual_seed(seed)
    x = torch.cat(
        [
            _uniform_annulus(n_inner, 0.0, inner_radius, g),
            _uniform_annulus(n_outer, *outer_radii, g),
        ]
    )
    y = torch.cat([torch.zeros(n_inner, device=x.device), torch.ones(n_outer, device=x.device)])
    return x, y
