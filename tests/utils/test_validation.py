"""Tests of iclcore.validation (the shared checks) and iclcore.linalg (the shared linear algebra)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from iclcore.linalg import haar_orthogonal, joint_diagonalizer, principal_angles, stable_rank
from iclcore.validation import (
    ParameterTypeError,
    as_generator,
    check_depth,
    finite_array,
    nondecreasing_times,
    nonnegative_int_steps,
    positive_float,
    positive_int,
    spectrum_pair,
    square_matrix,
    symmetric_matrix,
    symmetric_psd,
    symmetric_psd_eigh,
)

# ------------------------------------------------------------------------------------ randomness


def test_as_generator_passes_generators_through_and_accepts_seeds() -> None:
    g = np.random.default_rng(5)
    assert as_generator(g) is g
    np.testing.assert_array_equal(as_generator(7).standard_normal(4), np.random.default_rng(7).standard_normal(4))
    np.testing.assert_array_equal(as_generator(np.int64(7)).random(3), np.random.default_rng(7).random(3))


@pytest.mark.parametrize("bad", [None, "seed", 1.5, True, -1, object()])
def test_as_generator_refuses_non_seeds_naming_the_parameter(bad: object) -> None:
    with pytest.raises(TypeError, match="^gen:"):
        as_generator(bad, "gen")
    with pytest.raises(ValueError, match="^rng:"):  # ParameterTypeError is also a ValueError
        as_generator(bad)


def test_parameter_type_error_is_both_type_and_value_error() -> None:
    assert issubclass(ParameterTypeError, TypeError) and issubclass(ParameterTypeError, ValueError)


# ------------------------------------------------------------------------------------ scalars


def test_positive_int() -> None:
    assert positive_int(np.int32(3), "N") == 3 and isinstance(positive_int(np.int32(3), "N"), int)
    assert positive_int(0, "L", minimum=0) == 0
    for bad, exc in ((0, ValueError), (-2, ValueError), (2.0, TypeError), (True, TypeError), ("3", TypeError)):
        with pytest.raises(exc, match="^N:"):
            positive_int(bad, "N")
    with pytest.raises(ValueError, match="^n_nodes: expected an integer >= 16"):
        positive_int(8, "n_nodes", minimum=16)


def test_positive_int_bounds() -> None:
    """``minimum = 0`` checks a count, ``maximum`` an index or a rank; every message names the parameter."""
    assert positive_int(np.int64(0), "n_drop", minimum=0, maximum=2) == 0
    assert positive_int(3, "r", maximum=3) == 3
    with pytest.raises(ValueError, match=r"^r: expected an integer in \[1, 3\], got 4"):
        positive_int(4, "r", maximum=3)
    with pytest.raises(ValueError, match="^n_steps: expected a non-negative integer, got -1"):
        positive_int(-1, "n_steps", minimum=0)
    with pytest.raises(TypeError, match=r"^i: expected an integer in \[0, 2\]"):
        positive_int(1.0, "i", minimum=0, maximum=2)


def test_positive_float() -> None:
    assert positive_float(2, "eta") == 2.0
    assert positive_float(math.inf, "alpha", allow_inf=True) == math.inf
    assert positive_float(0.0, "sigma", allow_zero=True) == 0.0
    for bad in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="^eta:"):
            positive_float(bad, "eta")
    with pytest.raises(TypeError, match="^eta:"):
        positive_float("1", "eta")


def test_check_depth_two_semantics() -> None:
    assert check_depth(3) == 3 and check_depth(3.0) == 3
    assert check_depth(0, minimum=0) == 0
    assert check_depth(math.inf, allow_inf=True) == math.inf
    with pytest.raises(ValueError, match="^L:"):
        check_depth(0)
    with pytest.raises(ValueError, match="^L:.*infinite"):
        check_depth(math.inf)
    with pytest.raises(ValueError, match="^L:"):
        check_depth(2.5)
    with pytest.raises(TypeError, match="^L:"):
        check_depth(True)


# ------------------------------------------------------------------------------------ arrays


def test_array_checks_name_the_parameter() -> None:
    with pytest.raises(ValueError, match="^X: contains NaN"):
        finite_array([1.0, np.nan], "X")
    with pytest.raises(TypeError, match="^X:"):
        finite_array(["a"], "X")
    np.testing.assert_array_equal(nonnegative_int_steps(3), [3])
    with pytest.raises(ValueError, match="^steps:"):
        nonnegative_int_steps([1, -1])
    with pytest.raises(ValueError, match="^steps:"):
        nonnegative_int_steps([1.5])
    with pytest.raises(ValueError, match="^t:"):
        nondecreasing_times([0.0, 2.0, 1.0])
    lam, om = spectrum_pair([1.0, 0.5], [1.0, 0.0])
    assert lam.shape == om.shape == (2,)
    with pytest.raises(ValueError, match="^lam:"):
        spectrum_pair([1.0, 0.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="^omega:"):
        spectrum_pair([1.0, 0.5], [1.0])


def test_square_matrix() -> None:
    np.testing.assert_array_equal(square_matrix([[1, 2], [3, 4]], "G0", 2), [[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(ValueError, match="^G0: must be a square matrix"):
        square_matrix(np.ones((2, 3)), "G0")
    with pytest.raises(ValueError, match="^G0: shape"):
        square_matrix(np.eye(3), "G0", 2)
    with pytest.raises(ValueError, match="^Q: contains NaN"):
        square_matrix(np.full((2, 2), np.nan), "Q")


def test_symmetric_psd() -> None:
    S = np.diag([2.0, 0.0])
    np.testing.assert_array_equal(symmetric_psd(S, "S"), S)
    with pytest.raises(ValueError, match="^S: matrix is not positive definite"):
        symmetric_psd(S, "S", definite=True)
    with pytest.raises(ValueError, match="^S: matrix is not positive semi-definite"):
        symmetric_psd(np.diag([1.0, -0.5]), "S")
    with pytest.raises(ValueError, match="^S: matrix is not symmetric"):
        symmetric_psd(np.array([[1.0, 0.5], [0.0, 1.0]]), "S")
    with pytest.raises(ValueError, match="^S: contains NaN"):
        symmetric_psd(np.full((2, 2), np.nan), "S")
    with pytest.raises(ValueError, match="^S: expected a non-empty square"):
        symmetric_psd(np.ones((2, 3)), "S")


def test_symmetric_matrix_and_the_definite_covariances_built_on_it() -> None:
    """The one symmetry test (symmetric_matrix) and the one PD test (psd_spectrum(definite=True))."""
    from iclcore.lsq.dynamics import psd_spectrum
    from iclcore.richardson.subspace import effective_rank

    A = np.array([[2.0, 1.0], [1.0, -3.0]])  # symmetric, indefinite: accepted by symmetric_matrix
    np.testing.assert_array_equal(symmetric_matrix(A, "S"), A)
    with pytest.raises(ValueError, match="^S: matrix is not symmetric"):
        symmetric_matrix(np.array([[1.0, 0.5], [0.0, 1.0]]), "S")
    with pytest.raises(ValueError, match="^S: expected a non-empty square matrix"):
        symmetric_matrix(np.ones((2, 3)), "S")
    with pytest.raises(ValueError, match="^Sigma_z: matrix is not positive definite"):
        psd_spectrum(np.diag([1.0, 0.0]), "Sigma_z", definite=True)
    assert psd_spectrum(np.diag([1.0, 0.0]), "Sigma_z").lam.tolist() == [0.0, 1.0]
    with pytest.raises(ValueError, match="^Sigma: matrix is not positive semi-definite"):
        effective_rank(A)
    assert effective_rank(np.diag([2.0, 1.0, 1.0])) == 2.0


def test_symmetric_psd_eigh_is_the_same_check_with_the_eigendecomposition() -> None:
    rng = np.random.default_rng(0)
    A = rng.standard_normal((4, 6))
    S = A @ A.T / 6
    lam, Q = symmetric_psd_eigh(S, "C")
    np.testing.assert_allclose(Q @ np.diag(lam) @ Q.T, S, atol=1e-13)
    assert np.all(np.diff(lam) >= 0)
    for bad, word in ((np.array([[1.0, 0.5], [0.0, 1.0]]), "symmetric"), (np.diag([1.0, -0.5]), "positive semi")):
        for check in (symmetric_psd, symmetric_psd_eigh):
            with pytest.raises(ValueError, match=f"^C: matrix is not {word}"):
                check(bad, "C")
    with pytest.raises(ValueError, match="^C: matrix is not positive definite"):
        symmetric_psd_eigh(np.diag([1.0, 0.0]), "C", definite=True)
    # round-off below zero (relative to the largest eigenvalue) is accepted, not clipped
    lam, _ = symmetric_psd_eigh(np.diag([1.0, -1e-13]), "C")
    assert lam[0] == -1e-13


# ------------------------------------------------------------------------------------ linalg


def _sign_fixed_qr(G: np.ndarray) -> np.ndarray:
    """``Q diag(sign(diag R))`` of ``G = QR``: Haar-distributed when ``G`` has i.i.d. Gaussian entries."""
    Q, R = np.linalg.qr(G)
    return Q * np.sign(np.diagonal(R, axis1=-2, axis2=-1))[..., None, :]


def test_haar_orthogonal_is_the_sign_fixed_qr_of_one_gaussian_draw() -> None:
    # square, frame and batch draws: one standard normal draw of the full shape, then the sign-fixed QR
    for shape, kwargs in (((5, 5), {}), ((6, 3), {"columns": 3}), ((4, 5, 5), {"size": 4})):
        got = haar_orthogonal(shape[-2], np.random.default_rng(11), **kwargs)
        want = _sign_fixed_qr(np.random.default_rng(11).standard_normal(shape))
        np.testing.assert_array_equal(got, want)
        assert got.shape == shape
        np.testing.assert_allclose(
            np.swapaxes(got, -1, -2) @ got,
            np.broadcast_to(np.eye(shape[-1]), got.shape[:-2] + (shape[-1],) * 2),
            atol=1e-12,
        )


def test_haar_orthogonal_is_haar_on_average() -> None:
    # For Haar O(n), n >= 2: E tr Q = 0 and E (tr Q)^2 = 1, so the mean trace over N draws has SE 1/sqrt(N).
    N = 4000
    Q = haar_orthogonal(3, 0, size=N)
    tr = np.trace(Q, axis1=1, axis2=2)
    assert abs(tr.mean()) < 4.0 / math.sqrt(N)
    assert abs((tr**2).mean() - 1.0) < 4.0 * math.sqrt(np.var(tr**2) / N)


def test_haar_orthogonal_errors() -> None:
    with pytest.raises(ValueError, match="^columns:"):
        haar_orthogonal(3, 0, columns=4)
    with pytest.raises(ValueError, match="^n:"):
        haar_orthogonal(0, 0)
    with pytest.raises(TypeError, match="^rng:"):
        haar_orthogonal(3, None)


def test_joint_diagonalizer_recovers_a_common_eigenbasis() -> None:
    V = haar_orthogonal(5, 3)
    mats = np.stack([(V * d) @ V.T for d in np.random.default_rng(4).uniform(0.5, 2.0, (6, 5))])
    Q = joint_diagonalizer(mats)
    off = np.einsum("ia,nij,jb->nab", Q, mats, Q)
    off[:, np.arange(5), np.arange(5)] = 0.0
    assert np.abs(off).max() < 1e-10


def test_stable_rank_single_and_stack() -> None:
    A = np.diag([4.0, 3.0])
    assert stable_rank(A) == pytest.approx(25 / 16) and isinstance(stable_rank(A), float)
    np.testing.assert_allclose(stable_rank(np.stack([A, np.eye(3)[:2, :2]])), [25 / 16, 2.0])
    with pytest.raises(ValueError, match="^P: stable rank of the zero matrix"):
        stable_rank(np.zeros((2, 2)), "P")


def test_principal_angles_ascending_and_exact() -> None:
    th = np.array([0.1, 0.7, 1.3])
    U = np.eye(6)[:, :3]
    V = np.zeros((6, 3))
    V[np.arange(3), np.arange(3)] = np.cos(th)
    V[3 + np.arange(3), np.arange(3)] = np.sin(th)
    got = principal_angles(U @ np.array([[2.0, 1, 0], [0, 1, 0], [0, 0, 3]]), V[:, ::-1])
    np.testing.assert_allclose(got, th, atol=1e-12)
    with pytest.raises(ValueError, match="^V: ambient dimension"):
        principal_angles(np.eye(4)[:, :2], np.eye(5)[:, :2])


def test_torch_generator_names_the_parameter() -> None:
    import torch

    from iclcore.validation import ParameterTypeError, torch_generator

    g = torch.Generator().manual_seed(0)
    assert torch_generator(g) is g
    with pytest.raises(ParameterTypeError, match="^generator: expected a torch.Generator, got int"):
        torch_generator(0, "generator")
