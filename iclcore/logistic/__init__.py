"""Exact mode dynamics of in-context logistic regression (Mainali & Teixeira).

Implements Mainali & Teixeira: the model of §2 (Eqs. 1-8), online SGD on a
fixed set of P tasks that share the eigenbasis ``U`` of the input covariance (§2.3,
App. A.8), the paper's theory of §3 (ODEs (9)-(10), mode ODE (12), logistic solution
(13), loss (14), L(inf), fixed point ``p2 q1 = [s_inf(S)]^{-1}``, conserved ``C``,
timescales), and the *exact* expected dynamics of the stated model at finite context
length ``N``.

Notation and conventions (every choice the paper leaves open is stated here)
----------------------------------------------------------------------------
* ``d`` input/output dimension, ``D = 2d`` embedding dimension, ``N`` context length.
* The read-out blocks are stored as ``pT = p^T = (p1 p2)`` of shape ``(d, D)`` (the
  bottom ``d`` rows of ``W^P``) and ``q = (q1; q2)`` of shape ``(D, d)`` (the first
  ``d`` columns of ``W^Q``), Eqs. (2)-(3). No other entry of ``W^P``, ``W^Q`` enters
  the prediction (they receive exactly zero gradient).
* ``Gamma_hat = Z Z^T / N`` *includes* the query column (Eq. 1 normalises by ``N``
  although ``Z`` has ``N + 1`` columns); the simulation uses the model exactly as
  stated, not the large-N simplification (A11).
* Time ``t`` of the theory is measured in epochs (one epoch = ``P`` SGD steps, one per
  task, tasks visited in the fixed order ``mu = 0..P-1``), so that
  ``tau_alpha = 1 / (eta P s_alpha^2)`` epochs, as in (A63)-(A80).
* Each SGD step draws ``B`` fresh independent contexts (each with its own query) for the
  current task and uses the *mean* of their gradients ("batch ... accumulated", A.8.4).
* Tasks ``W^mu = U diag(lambda_mu) U^T`` with ``lambda_mu ~ N(0, I_d)``; the
  ``antithetic`` option draws ``P/2`` of them and appends their negatives, which makes
  every odd empirical moment of the task set exactly zero.
* ``c_alpha = (1/P) sum_mu lambda_{mu alpha}^2`` is the empirical task variance of mode
  ``alpha``; the paper replaces it by ``E[lambda^2] = 1``. Functions of the paper's
  theory accept an optional ``c`` (default 1: the paper verbatim).

Public modules:

- :mod:`~iclcore.logistic.exact`: Exact expected dynamics of the stated logistic-mode model (``p1 = q2 = 0``)
  at any context length ``N``: expected loss and gradients, mode loss and gradients, fixed point, the
  integrated mode flow, Monte Carlo loss and crossing times;
- :mod:`~iclcore.logistic.model`: The model of Mainali & Teixeira §2 (Eqs. 1-8): problem (covariance
  eigenbasis, tasks), embedding, one-layer linear transformer, read-out blocks, contexts, loss and gradients,
  and the conserved quantity;
- :mod:`~iclcore.logistic.probes`: The curvature probes of the loss and the parameter norm and their extrema, on
  one run and on replica means of growing size (the finite-size check; §4, Fig. 4A-B);
- :mod:`~iclcore.logistic.regimes`: Training regimes compared with the paper's theory and the exact flow: fixed
  point, trajectories and conserved ``C``, end loss, plateaus and cliffs, the probes of §4 with their null and
  finite-size check, the null blocks (Figs. 1-4);
- :mod:`~iclcore.logistic.replicas`: Estimates from independent SGD replicas and their standard errors: the
  fixed point, half-saturation and crossing times, relative RMS deviations (§3, Figs. 1-3);
- :mod:`~iclcore.logistic.sgd`: Online SGD of the logistic-mode model on a fixed set of tasks (Mainali &
  Teixeira §2.3, App. A.8), with mode products of the trained blocks;
- :mod:`~iclcore.logistic.theory`: The paper's theory (Mainali & Teixeira §3, App. A.11-A.13): mode ODE (12),
  logistic solution (13), loss (14), its limit, fixed point, timescales, half and cliff times;
- :mod:`~iclcore.logistic.transformer_probes`: The probes of §4 on trained non-linear stand-in models: marginalized
  effective rank and subspace distance per depth, staggered minima over seeds, grokking (Figs. 3B, 5-7).

This file imports none of them (why: :mod:`iclcore`): import from the modules, e.g.
``from iclcore.logistic.model import make_problem``.
"""

__all__ = ["exact", "model", "probes", "regimes", "replicas", "sgd", "theory", "transformer_probes"]
