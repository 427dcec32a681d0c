"""The §4 probes on trained stand-in transformers (iclcore.logistic.transformer_probes), on planted runs."""

from types import SimpleNamespace

import numpy as np
import pytest

from iclcore.logistic import transformer_probes as lp
from iclcore.models.probes import checkpoint_probes, effective_rank_of_values


def _icl_run(T: int = 6, seed: int = 0, layers: int = 1, heads: int = 2, d: int = 4) -> SimpleNamespace:
    """Per-head products whose singular values separate over training: sv_k(t) = 1 + t (d - k)."""
    rng = np.random.default_rng(seed)
    U, _ = np.linalg.qr(rng.standard_normal((d, d)))
    V, _ = np.linalg.qr(rng.standard_normal((d, d)))
    t = np.arange(T)
    sv = 1.0 + t[:, None] * (d - np.arange(d))  # (T, d)
    mats = np.einsum("ij,tj,kj->tik", U, sv, V)[:, None, None].repeat(layers, 1).repeat(heads, 2)
    return SimpleNamespace(
        steps=10 * t,
        late_loss=np.linspace(2.0, 0.5, T),
        icl_score=np.linspace(0.0, 1.0, T),
        ov=mats,
        qk=mats[::-1].copy(),
        seconds=1.0,
    )


def test_depth_probes_are_the_checkpoint_probes_of_both_products() -> None:
    run = _icl_run()
    pb = lp.depth_probes(run, 4, (10.0, 40.0))
    mer_ov, sd_ov = checkpoint_probes(run.ov, 4)
    mer_qk, sd_qk = checkpoint_probes(run.qk, 4)
    np.testing.assert_array_equal(pb.mer_ov, mer_ov)
    np.testing.assert_array_equal(pb.sd, (sd_ov + sd_qk) / 2)
    # the spectrum spreads out with training: the OV effective rank falls, so its minimum is the last step
    assert pb.minima_steps("ov")[0] == run.steps[-1] and pb.minima_steps("qk")[0] == run.steps[0]
    with pytest.raises(ValueError, match="window"):
        lp.depth_probes(run, 4, (1.0,))
    with pytest.raises(ValueError, match="product"):
        pb.minima_steps("vo")


def test_icl_depth_metrics_mark_what_never_happens() -> None:
    run = _icl_run()
    pb = lp.depth_probes(run, 4, (float("nan"), 40.0))
    flat = lp.DepthProbes(pb.steps, pb.mer_ov, pb.mer_qk, np.ones(run.steps.size), pb.window)  # never halves
    m = lp.icl_depth_metrics(2, run, flat)
    assert m["subdist_half_step_L2"] == run.steps[-1] + 1 and m["emergence_start_L2"] == -1.0
    assert m["emergence_end_L2"] == 40.0 and m["icl_late_loss_final_L2"] == 0.5
    one = lp.icl_depth_metrics(1, run, pb)
    assert "emergence_start_L1" not in one
    assert one["ov_effrank_L1_start"] > one["ov_effrank_L1_end"] and one["ov_effrank_L1_max_drop"] > 0
    assert one["qk_effrank_dip_L1"] == float(pb.mer_qk[0, 0] - pb.mer_qk[:, 0].min())


def test_staggered_minima_reuse_the_main_probes_exactly() -> None:
    runs = [_icl_run(seed=s) for s in (0, 0, 1)]
    main = lp.depth_probes(runs[0], 4, (0.0, 1.0))
    st = lp.staggered_minima(runs, 4, main)
    assert st.t_min["qk"].shape == (3, 4)
    np.testing.assert_array_equal(st.t_min["ov"][0], st.t_min["ov"][1])  # recomputed = reused
    with pytest.raises(ValueError, match="runs"):
        lp.staggered_minima(runs[:1], 4, main)


def test_stagger_metrics_on_planted_minima() -> None:
    t_qk = np.array([[0.0, 10.0, 30.0, 60.0], [0.0, 20.0, 30.0, 50.0], [10.0, 20.0, 40.0, 70.0]])
    st = lp.StaggeredMinima({"qk": t_qk, "ov": t_qk[:, ::-1].copy()})
    m = st.metrics()
    inc = np.diff(t_qk, axis=1)
    se = inc.std(0, ddof=1) / np.sqrt(3)
    k = int(np.argmin(inc.mean(0) - 3 * se))
    assert m["qk_stagger_min_increment"] == pytest.approx(inc.mean(0)[k])
    assert m["qk_stagger_min_increment_se"] == pytest.approx(se[k])
    assert m["qk_stagger_seeds_ordered"] == 1.0 and m["ov_stagger_seeds_ordered"] == 0.0
    spans = np.array([60.0, 50.0, 60.0])
    assert m["qk_stagger_span"] == pytest.approx(spans.mean())
    assert m["qk_stagger_span_se"] == pytest.approx(spans.std(ddof=1) / np.sqrt(3))


def _grok_run(T: int = 11) -> SimpleNamespace:
    steps = 100.0 * np.arange(T)
    train_acc = np.clip(np.arange(T) / 2.0, 0, 1)  # >= 0.99 from step 200
    test_acc = np.clip((np.arange(T) - 4) / 3.0, 0, 1)  # >= 0.9 from step 700
    rng = np.random.default_rng(0)
    ov = rng.standard_normal((T, 2, 6, 3)) @ rng.standard_normal((T, 2, 3, 6))  # per-head rank d_head = 3
    return SimpleNamespace(
        steps=steps,
        train_acc=train_acc,
        test_acc=test_acc,
        train_loss=np.linspace(1, 0.1, T),
        test_loss=np.linspace(2, 0.2, T),
        ov=ov,
        config=SimpleNamespace(d_head=3, n_heads=2),
        seconds=1.0,
    )


def test_grokking_probes_steps_and_rates() -> None:
    run = _grok_run()
    gp = lp.grokking_probes(run)
    assert (gp.t_mem, gp.t_gen) == (200.0, 700.0)
    sv = np.linalg.svd(run.ov, compute_uv=False)[..., :3]
    np.testing.assert_array_equal(gp.eff_rank, effective_rank_of_values(sv).mean(1))
    assert gp.subspace_distance[-1] == pytest.approx(0.0, abs=1e-12)  # the final checkpoint is the reference
    assert np.all(gp.subspace_distance[:-1] > 0.1)  # independent random row spaces
    # planted effective rank: constant before memorisation, falls by 1 per 100 steps until generalisation, flat after
    er = np.array([5.0, 5.0, 5.0, 4.0, 3.0, 2.0, 1.0, 0.0, 0.0, 0.0, 0.0])
    m = lp.GrokkingProbes(er, gp.subspace_distance, 200.0, 700.0, gp.t_stab).metrics(run)
    assert m["grok_ov_effrank_rate_delayed"] == 5.0 / 500.0
    assert m["grok_ov_effrank_rate_before"] == 0.0 and m["grok_ov_effrank_rate_after"] == 0.0
    never = lp.GrokkingProbes(er, gp.subspace_distance, 200.0, float("nan"), gp.t_stab).metrics(run)
    assert never["grok_gen_step"] == -1.0 and never["grok_ov_effrank_rate_delayed"] == -1.0
