"""Metrics of the depth-probe sweep from checkpoint records (iclcore.gd.depth_probe, notebook gd_probe)."""

from __future__ import annotations

import numpy as np
import pytest

from iclcore.gd.depth_probe import (
    SUMMARY_KEYS,
    ProbeRun,
    ProbeSweep,
    half_max_step,
    iid_noise_reference,
    probe_run_metrics,
    probe_sweep_metrics,
    resolved_improving_fraction,
)


def _record(step: int, L: int, **values: float) -> dict:
    """A checkpoint record with every key the metrics read (0.5 unless given)."""
    rec = {k: 0.5 for k in SUMMARY_KEYS}
    rec.update({f"med_l{l}": 2.0 - 0.5 * l for l in range(L + 1)}, **{f"med_l{l}_se": 0.01 for l in range(L + 1)})
    rec.update({f"bos_l{l}": 0.1 * l for l in range(1, L + 1)}, bos_late_early=2.0, mae_0=2.0, med_l0=2.0, step=step)
    rec.update(values)
    return rec


def test_a_step_counts_only_when_its_fall_exceeds_z_standard_errors() -> None:
    med, se = np.array([4.0, 3.0, 2.9, 2.0]), np.array([0.1, 0.1, 0.1, 0.1])
    # falls 1.0, 0.1, 0.9 against 3 (0.1 + 0.1) = 0.6: the middle one is within noise
    assert resolved_improving_fraction(med, se) == 2 / 3
    assert resolved_improving_fraction(med, se, z=0) == 1.0
    assert resolved_improving_fraction(med[::-1], se) == 0.0
    with pytest.raises(ValueError, match="med, med_se"):
        resolved_improving_fraction(med, se[:2])


def test_half_max_step_is_the_first_step_at_half_the_final_value() -> None:
    steps = np.array([0, 1, 2, 4, 8])
    assert half_max_step(steps, np.array([0.0, 0.1, 0.3, 0.4, 0.6])) == 2
    assert half_max_step(steps, np.array([0.0, 0.1, 0.3, 0.4, -0.1])) == -1  # no gain at the end
    with pytest.raises(ValueError, match="steps, values"):
        half_max_step(steps, np.ones(3))


def test_valley_depth_is_the_lowest_gain_after_step_zero() -> None:
    L = 3
    recs = [
        _record(0, L, er_abs=0.4, med_er_abs=0.4, med_er_abs_se=0.02, curvature_corr=0.0),
        _record(1, L, er_abs=-0.2, med_er_abs=-0.6, med_er_abs_se=0.04),
        _record(4, L, er_abs=0.8, med_er_abs=0.8, med_er_abs_se=0.01, curvature_corr=-0.5),
    ]
    m = probe_run_metrics(recs, "gpt", L, n_probe=103)
    assert m["gpt_valley_depth"] == (-0.2 - 0.4) / 2.0 and m["gpt_min_er_abs"] == -0.2
    assert m["gpt_med_valley_depth"] == (-0.6 - 0.4) / 2.0 and m["gpt_med_valley_step"] == 1
    assert m["gpt_med_valley_depth_se"] == pytest.approx((0.04 + 0.02) / 2.0)
    assert m["gpt_curvature_corr_fisher_z"] == np.arctanh(-0.5) and m["gpt_curvature_corr_fisher_se"] == 0.1
    assert m["gpt_med_resolved_improving_fraction"] == 1.0  # falls of 0.5 against 3 (0.01 + 0.01)
    assert m["gpt_bos_l3"] == pytest.approx(0.3) and m["gpt_step0_er_abs"] == 0.4 and m["gpt_er_abs"] == 0.8
    assert "lsa_bos_l1" not in probe_run_metrics(recs, "lsa", L, n_probe=103) | m
    with pytest.raises(ValueError, match="kind"):
        probe_run_metrics(recs, "rnn", L, n_probe=103)
    with pytest.raises(ValueError, match="records"):
        probe_run_metrics(recs[:1], "gpt", L, n_probe=103)


def test_sweep_metrics_sum_over_runs_and_name_each_run() -> None:
    sweep = ProbeSweep(lsa_layers=2, gpt_layers=2, warmups=(0, 10), seeds=(0,), s_lo=0.5, s_hi=2.0)

    def run(gain: float, skipped: int) -> ProbeRun:
        recs = [_record(0, 2, er_rel=0.0), _record(1, 2, er_rel=0.2 * gain), _record(4, 2, er_rel=gain)]
        return ProbeRun(recs, np.zeros(4), skipped, 1.5)

    runs = {key: run(0.8, i) for i, key in enumerate(sweep.keys())}
    m = probe_sweep_metrics(runs, sweep)
    assert m["curvature_range"] == 16.0 and m["iid_alpha"] == iid_noise_reference(0.0)["alpha"]
    assert m["lsa_skipped"] == 0 + 1 and m["gpt_skipped"] == 2 + 3 and m["gpt_cpu_seconds"] == 3.0
    assert m["lsa_w10_s0_halfmax_step"] == 4 and m["gpt_w0_s0_er_rel"] == 0.8
