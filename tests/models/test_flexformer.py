"""Tests for iclcore.models.flexformer (the task-dependent Richardson preconditioner)."""

import numpy as np
import pytest
import torch

from iclcore.lsq.tasks import TaskConfig, sample_prompt_statistics
from iclcore.models.flexformer import (
    Flexformer,
    FlexformerConfig,
    KernelDictionaryPreconditioner,
    depth_loss,
    kernel_dictionary,
    preconditioners_numpy,
    richardson_unroll,
    train_preconditioner,
)

torch.set_num_threads(1)
CFG = TaskConfig(K=5, M=20, r=2, sigma=0.1, cond=5.0, target="ridge")


def _tasks(n, seed):
    p = sample_prompt_statistics(CFG, n, np.random.default_rng(seed))
    return p.H_M, p.d, p.z_star


def _sampler(n, rng):
    p = sample_prompt_statistics(CFG, n, rng)
    return p.H_M, p.d, p.z_star


def _model(heads=2, rank=2, seed=0, trained=True):
    m = Flexformer(FlexformerConfig(K=5, rank=rank, n_heads=heads, d_k=3), torch.Generator().manual_seed(seed))
    with torch.no_grad():  # switch the heads on so that P depends on the task
        m.c.copy_(torch.linspace(0.1, 0.3, heads, dtype=torch.float64))
        m.U.mul_(10.0)
    return m


def test_frozen_identity():
    """x_L − x† = (I − P_Θ(H)H)^L (x_0 − x†) with the extracted per-task P_Θ (seed 001 §4.2)."""
    H, d, xs = _tasks(40, 1)
    m = _model()
    L = 9
    with torch.no_grad():
        xL = m(torch.as_tensor(H), torch.as_tensor(d), L)[:, -1].numpy()
    P = preconditioners_numpy(m, H, d)
    xdag = np.linalg.solve(H, d[..., None])[..., 0]
    T = np.eye(5) - P @ H
    pred = xdag - (np.linalg.matrix_power(T, L) @ xdag[..., None])[..., 0]
    assert np.max(np.abs(xL - pred)) <= 1e-12 * max(1.0, np.max(np.abs(xdag)))
    # the heads make P genuinely task dependent
    assert np.max(np.abs(P - P.mean(0))) > 1e-3


def test_extracted_P_equals_its_action():
    """Jacobian of one update x ↦ x + P_Θ(H,d)(d − Hx) is −P_Θ H (seed 000 §8: J_θ = P_Θ on the residual)."""
    H, d, _ = _tasks(3, 2)
    m = _model()
    Ht, dt = torch.as_tensor(H), torch.as_tensor(d)
    P = preconditioners_numpy(m, H, d)
    for b in range(3):

        def update(x, b=b):
            r = dt[b] - Ht[b] @ x
            return m.preconditioner(Ht[b : b + 1], dt[b : b + 1])[0] @ r

        J = torch.func.jacrev(update)(torch.zeros(5, dtype=torch.float64)).detach().numpy()
        assert np.max(np.abs(J + P[b] @ H[b])) <= 1e-12 * np.max(np.abs(P[b] @ H[b]))


def test_gradient_finite_differences():
    H, d, xs = (torch.as_tensor(a) for a in _tasks(6, 3))
    m = _model()
    names = [n for n, _ in m.named_parameters()]
    params = [p.detach().clone().requires_grad_(True) for p in m.parameters()]

    def f(*ps):
        return torch.func.functional_call(m, dict(zip(names, ps)), (H, d, 4))[:, -1].pow(2).sum() / 30

    assert torch.autograd.gradcheck(f, params, eps=1e-6, atol=1e-6, rtol=1e-5)


def test_heads_off_is_low_rank_linear():
    H, d, _ = _tasks(10, 4)
    m = _model(heads=0, rank=2)
    P = preconditioners_numpy(m, H, d)
    UV = (m.U @ m.V.T).detach().numpy()
    assert np.array_equal(P, np.broadcast_to(UV, P.shape))
    assert np.linalg.matrix_rank(UV) == 2


def test_warm_start_is_truncated_svd():
    rng = np.random.default_rng(5)
    P0 = rng.standard_normal((5, 5))
    m = Flexformer(FlexformerConfig(K=5, rank=5, n_heads=1), torch.Generator().manual_seed(0), P_init=P0)
    H, d, _ = _tasks(2, 6)
    assert np.max(np.abs(preconditioners_numpy(m, H, d) - P0)) <= 1e-13


def test_deterministic_training():
    def run():
        m = Flexformer(FlexformerConfig(K=5, rank=2, n_heads=1, d_k=2), torch.Generator().manual_seed(7))
        res = train_preconditioner(m, _sampler, 3, steps=15, batch=32, lr=1e-2, rng=np.random.default_rng(8))
        return res.loss, [p.detach().clone() for p in m.parameters()]

    la, pa = run()
    lb, pb = run()
    assert np.array_equal(la, lb)
    assert all(torch.equal(a, b) for a, b in zip(pa, pb))


def test_training_decreases_loss():
    m = Flexformer(FlexformerConfig(K=5, rank=5, n_heads=1, d_k=2), torch.Generator().manual_seed(1))
    H, d, xs = (torch.as_tensor(a) for a in _tasks(512, 11))
    with torch.no_grad():
        before = depth_loss(m, H, d, x_star=xs, L=4).item()
    train_preconditioner(m, _sampler, 4, steps=150, batch=64, lr=2e-2, rng=np.random.default_rng(2))
    with torch.no_grad():
        after = depth_loss(m, H, d, x_star=xs, L=4).item()
    assert after < 0.5 * before


def test_kernel_dictionary():
    x = np.arange(1, 8) / 8
    Phi = kernel_dictionary(x, ("identity", "green", "matern52:0.2", "rbf:0.3"))
    assert Phi.shape == (4, 7, 7)
    # the Green kernel at the nodes inverts the P1 stiffness matrix (1/h) tridiag(-1, 2, -1)
    h = 1 / 8
    S = (2 * np.eye(7) - np.eye(7, k=1) - np.eye(7, k=-1)) / h
    assert np.max(np.abs(Phi[1] @ S - np.eye(7))) <= 1e-12
    m = KernelDictionaryPreconditioner(Phi, P_init=3 * Phi[1] - Phi[0])
    assert np.allclose(m.theta.detach().numpy(), [-1, 3, 0, 0], atol=1e-10)
    with pytest.raises(ValueError, match="kinds"):
        kernel_dictionary(x, ("matern52",))


def test_bad_input():
    with pytest.raises(ValueError, match="rank"):
        FlexformerConfig(K=3, rank=4)
    with pytest.raises(TypeError, match="generator"):
        Flexformer(FlexformerConfig(K=3, rank=1), generator=0)
    with pytest.raises(ValueError, match="L"):
        richardson_unroll(
            torch.zeros(1, 2, 2, dtype=torch.float64),
            torch.zeros(1, 2, 2, dtype=torch.float64),
            torch.zeros(1, 2, dtype=torch.float64),
            L=-1,
        )
    m = _model()
    with pytest.raises(ValueError, match="lr"):
        train_preconditioner(m, _sampler, 2, steps=2, batch=4, lr=-1.0, rng=np.random.default_rng(0))
