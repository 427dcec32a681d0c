"""Inner tasks of the dmft chapters (``iclcore.parallel.map_configs``): picklable, same bits on any executor.

The independent runs of ``dmft_width`` (spectra, SGD of the width model) and of
``dmft_attention`` (the Figure-6 network, the untied reduced model with and without label noise, the
network with trainable read-in and read-out, the flows of the Figure-6e exponent fit) are tasks of ``map_configs``. Each task function is checked on a tiny configuration: a pickle round trip of
the function and its configuration, and a thread pool of two giving exactly the serial results. The
spectra drawn from one shared generator must also equal the sequential calls and leave the generator
where they leave it.
"""

from __future__ import annotations

import dataclasses
import pickle
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from iclcore.dmft.data import power_law_spectrum
from iclcore.dmft.readout import (
    FullAttentionRun,
    PowerLawFlowJob,
    ReadoutSGDRun,
    full_attention_run,
    power_law_flow,
    readout_sgd_run,
)
from iclcore.dmft.untied import UntiedSGDRun, untied_sgd_run
from iclcore.dmft.width_mc import (
    WidthSGDRun,
    width_landscape_job,
    width_landscape_jobs,
    width_landscape_mc,
    width_sgd_run,
    width_spectrum_job,
    width_spectrum_jobs,
    width_spectrum_mc,
)
from iclcore.parallel import map_configs


def flat(x: object) -> object:
    """A comparable image of a result: dataclasses by field, arrays by dtype, shape and bytes."""
    if dataclasses.is_dataclass(x):
        return tuple((f.name, flat(getattr(x, f.name))) for f in dataclasses.fields(x))
    if isinstance(x, (list, tuple)):
        return tuple(flat(v) for v in x)
    if isinstance(x, np.ndarray):
        return (x.dtype.str, x.shape, x.tobytes())
    return (type(x).__name__, repr(x))


def same_on_threads(fn, configs: list) -> None:
    """Pickle round trip of ``fn`` and ``configs``; two threads give exactly the serial results."""
    assert pickle.loads(pickle.dumps(fn)) is fn
    assert flat(pickle.loads(pickle.dumps(configs))) == flat(configs)
    serial = map_configs(fn, configs, 1)
    with ThreadPoolExecutor(2) as pool:
        threaded = map_configs(fn, configs, executor=pool)
    assert flat(threaded) == flat(serial)


def test_width_spectrum_jobs_equal_the_sequential_draws_on_any_executor():
    lam, om = power_law_spectrum(32, 1.0, 1.0)
    Ns, k = [8, 32, 4], [2, 1, 3]
    rng_seq = np.random.default_rng(3)
    sequential = [width_spectrum_mc(lam, om, N, rng=rng_seq, n_draws=kk) for N, kk in zip(Ns, k)]
    rng_jobs = np.random.default_rng(3)
    jobs = width_spectrum_jobs(lam, om, Ns, n_draws=k, rng=rng_jobs)
    assert rng_jobs.bit_generator.state == rng_seq.bit_generator.state
    assert flat([width_spectrum_job(j) for j in jobs]) == flat(sequential)
    same_on_threads(width_spectrum_job, jobs)


def test_width_landscape_jobs_equal_the_sequential_draws_on_any_executor():
    lam, om = power_law_spectrum(12, 1.0, 1.0)
    grid = np.linspace(0.1, 3.0, 5)
    rng_seq = np.random.default_rng(4)
    sequential = [
        width_landscape_mc(grid, lam, om, N=N, L=2, rng=rng_seq, P=P, n_draws=2)
        for N, P in ((6, 8), (12, 8), (6, None))
    ]
    rng_jobs = np.random.default_rng(4)
    jobs = [
        j
        for N, P in ((6, 8), (12, 8), (6, None))
        for j in width_landscape_jobs(grid, lam, om, N=N, L=2, rng=rng_jobs, P=P, n_draws=2)
    ]
    assert rng_jobs.bit_generator.state == rng_seq.bit_generator.state
    assert flat([width_landscape_job(j) for j in jobs]) == flat(sequential)
    same_on_threads(width_landscape_job, jobs)


def test_width_sgd_run_on_any_executor():
    lam, om = power_law_spectrum(6, 1.0, 1.0)
    runs = [WidthSGDRun(tuple(lam), tuple(om), N, 2, 4, 0.5, 4, N, 100 + N, 7, theory_draws=10) for N in (3, 6)]
    same_on_threads(width_sgd_run, runs)


def test_attention_runs_on_any_executor():
    lam, om = (tuple(v) for v in power_law_spectrum(4, 1.0, 1.0))
    same_on_threads(
        full_attention_run, [FullAttentionRun(k, lam, om, 8, 4, 4, 2, 1.2, 0.1, 100.0, 3, 5) for k in ("iso", "rrs")]
    )
    same_on_threads(
        untied_sgd_run,
        [UntiedSGDRun(lam, om, 2, 4, 0.5, 3, 1), UntiedSGDRun(lam, om, 2, 4, 0.5, 3, 2, P=8, K=4, sigma=1.0)],
    )
    same_on_threads(readout_sgd_run, [ReadoutSGDRun(4, 8, 4, 4, 2, 1.2, 0.3, 0.1, 3, r) for r in (0, 1)])
    t = tuple(np.geomspace(1e-2, 1e3, 20))
    same_on_threads(
        power_law_flow, [PowerLawFlowJob(D, 1.0, 1.0, t, k) for D, k in ((30, "w5"), (60, "w5"), (60, "gamma"))]
    )
