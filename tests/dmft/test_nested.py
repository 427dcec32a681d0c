"""The nested deterministic equivalent of Eq. 15 at finite width and context (iclcore.dmft.nested).

Facts checked: the two one-resource limits reproduce the solvers already in the book (P = ∞: the
one-point equivalent; N = D: the Appendix-A two-point formula with a Marchenko–Pastur factor); the
general case agrees with a small Monte Carlo within its stated error (3 SE plus the 1/min(N, P)
finite-size term of the chapter's deterministic-equivalent rows); bad input is refused naming the
parameter; non-convergence is one line with the residual; the Chinchilla fit and the frontier recover
known exponents from an exactly separable loss.
"""

from __future__ import annotations

import numpy as np
import pytest

from iclcore.dmft.data import power_law_spectrum
from iclcore.dmft.nested import (
    NestedConvergenceError,
    chinchilla_drift,
    compute_optimal_frontier,
    fit_chinchilla,
    nested_flow_loss,
    nested_kappa,
    nested_kernel,
    nested_landscape_draws,
    nested_loss,
    nested_loss_grad,
    nested_min_loss,
    nested_spectral_bound,
)
from iclcore.dmft.width_de import two_point_loss_de, width_loss_de
from iclcore.spectra.mp import mp_quadrature
from iclcore.stats import standard_error

D = 120
LAM, OM = power_law_spectrum(D, 1.0, 1.0)


def _kernel(N: int, P: int | None, seed: int = 0, n_nodes: int = 128):
    rng = np.random.default_rng(seed)
    return nested_kernel(LAM, OM, N, P=P, k_max=nested_spectral_bound(LAM, N, P, rng=rng, margin=1.5), n_nodes=n_nodes)


def test_infinite_context_is_the_one_point_equivalent() -> None:
    ker = _kernel(30, None)
    g = np.linspace(0.1, 1.0, 4) * nested_min_loss(ker, 3)[0]
    ref = width_loss_de(g, LAM, OM, N=30, L=3, k_max=ker.k_max, n_nodes=300)
    np.testing.assert_allclose(
        nested_loss(g, ker, 3), ref, rtol=2e-5
    )  # the kernel's mass tolerance 1e-6 of tr ΩΛ, relative to a loss >= 0.1


def test_full_width_is_the_two_point_wishart_equivalent() -> None:
    P = 60
    ker = _kernel(D, P)
    g = np.linspace(0.1, 1.0, 4) * nested_min_loss(ker, 3)[0]
    bn, bw = mp_quadrature(D / P, 80)
    ref = two_point_loss_de(g, LAM, bn, b_weights=bw, C=np.ones(D), T=OM * LAM, L=3, k_max=ker.k_max, n_nodes=200)
    np.testing.assert_allclose(nested_loss(g, ker, 3), ref, rtol=2e-5)


def test_loss_at_zero_step_is_the_total_and_gradient_matches_differences() -> None:
    ker = _kernel(30, 60)
    assert nested_loss(0.0, ker, 2) == pytest.approx(ker.total, rel=1e-6)
    g, h = 1.0, 1e-5
    fd = (nested_loss(g + h, ker, 2) - nested_loss(g - h, ker, 2)) / (2 * h)
    assert nested_loss_grad(g, ker, 2) == pytest.approx(fd, rel=1e-5)


def test_general_case_agrees_with_monte_carlo_within_its_error() -> None:
    N, P, L = 30, 60, 2
    ker = _kernel(N, P)
    g = np.linspace(0.2, 1.0, 3) * nested_min_loss(ker, L)[0]
    draws = nested_landscape_draws(g, LAM, OM, N=N, P=P, L=L, rng=np.random.default_rng(1), n_draws=60)
    mean, se = draws.mean(0), standard_error(draws, axis=0)
    rel = np.abs(nested_loss(g, ker, L) / mean - 1)
    assert np.all(rel <= 1.0 / min(N, P) + 3 * se / mean), (rel, se / mean)


def test_flow_starts_at_the_total_and_decreases_to_the_minimum() -> None:
    ker = _kernel(30, 60)
    t = np.array([0.0, 1.0, 10.0, 100.0, 1e6])
    y = nested_flow_loss(t, ker, 2)
    assert y[0] == pytest.approx(ker.total, rel=1e-6)
    assert np.all(np.diff(y) < 0)
    assert y[-1] == pytest.approx(nested_min_loss(ker, 2)[1], rel=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"N": D + 1}, "N"),
        ({"N": 0}, "N"),
        ({"P": 0}, "P"),
        ({"k_max": -1.0}, "k_max"),
        ({"n_nodes": 8}, "n_nodes"),
    ],
)
def test_kernel_rejects_bad_input(kwargs: dict, name: str) -> None:
    args = {"lam": LAM, "omega": OM, "N": 30, "P": 60, "k_max": 2.0, "n_nodes": 64} | kwargs
    with pytest.raises(ValueError, match=name):
        nested_kernel(**args)


def test_loss_rejects_bad_step_and_depth() -> None:
    ker = _kernel(30, 60)
    with pytest.raises(ValueError, match="gammas"):
        nested_loss(-1.0, ker, 2)
    with pytest.raises(ValueError, match="gammas"):
        nested_loss(10 * 2 / ker.k_max, ker, 2)
    with pytest.raises(ValueError, match="L"):
        nested_loss(0.1, ker, 0)
    with pytest.raises(ValueError, match="alpha_N"):
        nested_kappa(np.array([1.0 + 1j]), LAM, 1.5, inv_alpha_P=0.0)


def test_non_convergence_is_one_line_with_the_residual() -> None:
    with pytest.raises(NestedConvergenceError, match="residual") as err:
        nested_kappa(np.array([-0.3 + 0.01j, 0.2 + 0.5j]), LAM, 0.25, inv_alpha_P=2.0, tol=1e-300, max_iter=2)
    assert "\n" not in str(err.value)
    with pytest.raises(NestedConvergenceError, match="mass error") as err:
        nested_kernel(LAM, OM, 30, P=60, k_max=0.05, n_nodes=64, grow=0)
    assert "\n" not in str(err.value)


def test_chinchilla_fit_recovers_a_separable_law() -> None:
    a = np.array([0.2, 0.75, 0.5, 0.75])
    c = np.array([0.4, 1.0, 0.3, 0.8])
    grid = np.array(np.meshgrid([10, 100, 1e3, 1e4], [8, 16, 32, 64], [2, 4, 8, 16], [8, 16, 32, 64], indexing="ij"))
    x = grid.reshape(4, -1).T
    y = np.sum(c * x ** (-a), axis=1)
    fit = fit_chinchilla(x, y)
    np.testing.assert_allclose(fit.exponents, a, atol=1e-6)
    np.testing.assert_allclose(chinchilla_drift(x, y), 0.0, atol=1e-5)
    with pytest.raises(ValueError, match="x"):
        fit_chinchilla(x[:, :3], y)
    with pytest.raises(ValueError, match="loss"):
        fit_chinchilla(x, -y)


def test_frontier_of_a_separable_law_is_L_proportional_to_N_to_the_nu() -> None:
    nu, beta = 1.5, 0.5
    Ns = np.geomspace(4, 256, 25)
    Ls = np.geomspace(1, 512, 25)
    C = np.geomspace(1e6, 1e9, 5)
    t = C[:, None, None] / (Ns[None, :, None] ** 2 * Ls[None, None, :])
    y = t ** (-beta / (2 + beta)) + Ns[None, :, None] ** (-nu * beta) + Ls[None, None, :] ** (-beta)
    n_opt, l_opt, _, interior = compute_optimal_frontier(C, Ns, Ls, loss=y)
    assert interior.all()
    slope = np.polyfit(np.log(n_opt), np.log(l_opt), 1)[0]
    assert slope == pytest.approx(nu, abs=0.05)
    with pytest.raises(ValueError, match="loss"):
        compute_optimal_frontier(C, Ns, Ls, loss=y[:, :, :3])
