"""Seed 004 identity families: sympy certificates and exact-rational property tests (hypothesis).

Values are drawn *inside* each domain through the statement's parametrisation of the unit cube;
the parameter values 0 and 1 (boundary points such as eta a in {0, 2}, rho^2 in {0, 1}) are drawn
with positive probability and are also tested explicitly.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from iclcore.gd import identities as I
from iclcore.gd import matrix_lifts as ML
from iclcore.gd import statements as SM

PAPER_FAMILIES = {"A": 7, "B": 7, "C": 4, "D": 3, "V": 3, "M": 3, "MN": 3}
HYPOTHESIS_CARRYING = {"A5", "A7", "C3", "C4", "D1", "M2", "MN1", "MN2"}


def _unit(open_: bool) -> st.SearchStrategy[Fraction]:
    """A rational in [0, 1] (closed) or (0, 1) (open), boundary values included for closed params."""
    if open_:
        return st.integers(2, 97).flatmap(lambda n: st.integers(1, n - 1).map(lambda k: Fraction(k, n)))
    inner = st.integers(1, 97).flatmap(lambda n: st.integers(0, n).map(lambda k: Fraction(k, n)))
    return st.one_of(st.sampled_from([Fraction(0), Fraction(1), Fraction(1, 2)]), inner)


WITH_POINTS = [s for s in I.STATEMENTS if s.params]


@pytest.mark.parametrize("s", I.STATEMENTS, ids=lambda s: s.label)
def test_sympy_certificate(s):
    """Each residual (lhs - rhs, or gap - factor certificate) expands to exactly zero."""
    assert s.residuals(), f"{s.label}: no certificate"
    assert I.certify(s)


@pytest.mark.parametrize("s", WITH_POINTS, ids=lambda s: s.label)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_exact_property(s, data):
    t = {k: data.draw(_unit(k in s.open_params), label=k) for k in s.params}
    assert I.evaluate(s, t)


@pytest.mark.parametrize("s", WITH_POINTS, ids=lambda s: s.label)
def test_boundary_corners(s):
    """All corners of the closed parameter box (at most 2^6 of them) and the centre."""
    names = s.params[:6]
    for corner in itertools.product((Fraction(0), Fraction(1)), repeat=len(names)):
        t = {k: Fraction(1, 2) for k in s.params}
        t.update({k: (Fraction(1, 3) if k in s.open_params else x) for k, x in zip(names, corner)})
        assert I.evaluate(s, t), (s.label, t)


def test_boundaries_reach_the_window_edges():
    """A6: t = 0, 1 give eta a = 0 and 2 exactly, where (1 - eta a)^2 = 1 (non-expansive, not convergent)."""
    s = I.statement("A6")
    assert s.point({"x": Fraction(0)})["x"] == 0 and s.point({"x": Fraction(1)})["x"] == 2
    c1 = I.statement("C1")
    assert {c1.point({"rho2": Fraction(k)})["rho2"] for k in (0, 1)} == {0, 1}


def test_names_and_counts_follow_the_paper():
    """30 statements in 7 groups (A7+B7+C4+D3+V3+M3+MN3) plus the two ring identities, with Lean names."""
    paper = [s for s in I.STATEMENTS if s.origin in ("paper", "reconstructed") and s.family != "ring"]
    for fam, n in PAPER_FAMILIES.items():
        labels = sorted(s.label for s in paper if s.family == fam)
        assert labels == sorted(f"{fam}{k}" for k in range(1, n + 1)), fam
    assert len(paper) == 30
    ring = {s.lean for s in I.STATEMENTS if s.family == "ring" and s.origin == "paper"}
    assert ring == {"loss_decrease_identity", "error_recursion_identity"}
    assert I.statement("A1").lean == "attention_update_is_gd_step"
    assert I.statement("MN3").lean == "frobenius_update_energy_decomposition"
    assert {s.label for s in I.STATEMENTS if s.origin == "reconstructed"} == {"MN1", "MN2", "MN3"}
    assert {s.label for s in I.STATEMENTS if s.kind == "hypothesis-carrying"} == HYPOTHESIS_CARRYING
    assert all("not evidence" in I.statement(x).evidence for x in HYPOTHESIS_CARRYING)
    assert all(s.origin == "ours" for s in I.STATEMENTS if s.family == "lift")


def test_identity_table_lists_every_statement():
    tab = I.identity_table({s.label: {"sympy": True, "points": 3, "failures": 0} for s in I.STATEMENTS})
    for s in I.STATEMENTS:
        assert f"| {s.label} |" in tab
    assert tab.count("\n") == len(I.STATEMENTS) + 2


def test_half_loss_convention():
    """g = a w - b is the gradient of L/2. With the gradient of L itself (2g) the identity changes
    and the descent window shrinks to eta a <= 1: at eta a = 3/2 the unhalved step increases L."""
    a, b, c, w, eta = sp.symbols("a b c w eta", real=True)
    L = SM.loss(w, a, b, c=c)
    assert sp.expand(sp.diff(L, w) - 2 * SM.gradient(w, a, b)) == 0
    g_full = sp.diff(L, w)
    r = sp.expand(L - L.subs(w, w - eta * g_full) - eta * (2 - eta * a) * g_full**2)
    assert r != 0
    A, B, C, W, E = Fraction(2), Fraction(1), Fraction(5), Fraction(3), Fraction(3, 4)  # eta a = 3/2
    full = W - E * 2 * SM.gradient(W, A, B)
    half = SM.gd_step(W, A, B, eta=E)
    assert SM.loss(full, A, B, c=C) > SM.loss(W, A, B, c=C)
    assert SM.loss(half, A, B, c=C) < SM.loss(W, A, B, c=C)


def test_d2_is_an_equality_and_the_extremes_contract_equally():
    """At eta* = 2/(lmin + lmax) the extreme channels have the same factor (1 - eta* l)^2 (D2);
    for 0.9 and 108 it is 0.9672, and any middle channel contracts faster."""
    lmin, lmax = 0.9, 108.0
    eta = 2 / (lmin + lmax)
    f = lambda x: (1 - eta * x) ** 2  # noqa: E731
    assert f(lmin) == pytest.approx(f(lmax), rel=1e-14)
    assert f(lmin) == pytest.approx(0.9672, abs=5e-5)
    assert all(f(x) < f(lmin) for x in np.linspace(lmin, lmax, 50)[1:-1])


def test_descent_condition_lift_random():
    """Our lift of the window: for random symmetric P > 0 and H >= 0 the two forms of the descent
    condition agree, and when they hold L does not increase (float check, 200 draws incl. the edge)."""
    rng = np.random.default_rng(0)
    n_true = 0
    for k in range(200):
        d = int(rng.integers(1, 5))
        A = rng.standard_normal((d, d))
        H = A @ A.T
        B = rng.standard_normal((d, d))
        P = B @ B.T + 0.1 * np.eye(d)
        lam = np.linalg.eigvals(np.linalg.cholesky(P).T @ H @ np.linalg.cholesky(P)).real.max()
        P = P * (rng.uniform(0.2, 3.0) if k % 4 else 2.0) / lam  # every 4th draw sits on lambda_max = 2
        psd, window = ML.descent_condition_holds(P, H)
        assert psd == window
        n_true += psd
        g = rng.standard_normal(d)
        if psd:
            assert ML.matrix_loss_decrease(P, H, g) >= -1e-10 * (1 + np.abs(g).max() ** 2 * np.abs(P).max())
    assert 0 < n_true < 200


def test_layer_varying_steps_zero_d_modes_but_fixed_step_cannot():
    """d distinct eigenvalues are removed by d steps p_l = 1/lambda_l (exact Fractions); with d - 1
    such steps, or with d copies of one fixed step, the error survives."""
    s = I.statement("L4")
    q = s.point({k: Fraction(1, 3) for k in s.params})
    lam = q["lam"]
    assert all(x == 0 for x in ML.layer_varying_error([1 / x for x in lam], q["H"], q["e0"]))
    assert any(x != 0 for x in ML.layer_varying_error([1 / x for x in lam[:-1]], q["H"], q["e0"]))
    best = 2 / (lam[0] + lam[-1])
    assert any(x != 0 for x in ML.layer_varying_error([best] * 3, q["H"], q["e0"]))


def test_same_fact_as_dmft_untied_layers():
    """The DMFT width chapter's untied loss prod_l (1 - gamma_l lambda / L)^2 vanishes mode by mode
    when gamma_l = L / lambda_l: the untied loss with one step per eigenvalue is zero on a
    d-point spectrum, while the best tied (balanced) step leaves a positive loss."""
    from iclcore.dmft.untied import untied_loss

    lam = np.array([0.5, 1.0, 3.0])
    om = np.ones(3)
    L = 3
    assert untied_loss(L / lam, lam, om) == pytest.approx(0.0, abs=1e-14)
    tied = min(untied_loss(np.full(L, x), lam, om) for x in np.linspace(0.1, 10, 400))
    assert tied > 1e-3


def test_rational_orthogonal_is_exact():
    Q = ML.rational_orthogonal([Fraction(1, 3), Fraction(-2, 5), Fraction(7, 4)], 3)
    for i in range(3):
        for j in range(3):
            assert sum(Q[k][i] * Q[k][j] for k in range(3)) == (1 if i == j else 0)
    with pytest.raises(ValueError, match="s:"):
        ML.rational_orthogonal([Fraction(1)], 3)


def test_evaluate_rejects_bad_parameters():
    with pytest.raises(ValueError, match="outside"):
        I.evaluate(I.statement("A6"), {"x": Fraction(3, 2)})
    with pytest.raises(ValueError, match="outside"):
        I.evaluate(I.statement("C2"), {"rho2": Fraction(0)})
    with pytest.raises(ValueError, match="missing"):
        I.evaluate(I.statement("A6"), {})
    with pytest.raises(ValueError, match="label"):
        I.statement("Z9")
