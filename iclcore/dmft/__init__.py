"""DMFT theory of in-context linear regression by deep linear attention (Bordelon, Letey, Pehlevan).

The reduced-Γ model reduces a depth-``L`` linear-attention model with tied layers to a single
``D x D`` matrix ``Γ`` acting as the preconditioner of ``L`` steps of in-context gradient descent
(§2.2, Eq. 4; App. B.2, Eqs. 51–59; :func:`iclcore.lsq.iterates.in_context_gd_predict`).
With ``b_0 = 0``, ``c = Xᵀy / P`` and ``Σ̂ = XᵀX / P`` (rows of ``X`` are the ``P`` context inputs),

.. math::

    b_{\\ell+1} = b_\\ell + L^{-1}\\,\\Gamma\\,(c - \\hat\\Sigma b_\\ell), \\qquad f(x_*) = x_*^\\top b_L ,

and the population ICL loss of one context is ``|Σ^{1/2}(b_L - b_*)|² + σ²`` with ``b_* = β/√D``.

Modules: :mod:`~iclcore.dmft.data` (power-law spectra, the Marchenko–Pastur rule),
:mod:`~iclcore.dmft.iso`, :mod:`~iclcore.dmft.shallow_sgd`, :mod:`~iclcore.dmft.fs`,
:mod:`~iclcore.dmft.rrs` (the three data settings), :mod:`~iclcore.dmft.scaling` (bottlenecks and
exponents), :mod:`~iclcore.dmft.reduced_sgd` (SGD simulation of the reduced-Γ model), and for the
width-``N`` model :mod:`~iclcore.dmft.width_mc` (Monte Carlo), :mod:`~iclcore.dmft.width_de`
(deterministic equivalents) and :mod:`~iclcore.dmft.untied` (untied layers).

Conventions fixed once for the reduced-Γ modules
------------------------------------------------
* ``tr`` is the normalised trace ``(1/D) Tr``; every loss is ``O(1)`` and equals ``1 + σ²`` at ``Γ = 0``
  for ISO data (``tr ΩΛ + σ²`` in general).
* Context length ``P = αD``; the spectrum of ``Σ̂`` is Marchenko–Pastur with ratio ``D/P = 1/α``,
  i.e. ``iclcore.spectra.mp`` with ``gamma = 1/alpha`` (law of ``(1/M) XᵀX`` for ``X`` of shape
  ``(M, K) = (P, D)``).
* Theory time: gradient flow ``dγ/dt = -½ ∂L/∂γ`` (Bordelon et al. Eqs. 7, 10, 13, 83). The simulation
  takes SGD steps ``Γ ← Γ + η G`` with ``G = -(D/2) ∇_Γ L̂_batch`` (the ``G`` of Eq. 62); since
  ``∇_Γ L(γI) = L'(γ) I / D`` this gives theory time ``t = Σ_steps η`` exactly.
* Power-law data: ``λ_k = k^{-ν}`` and ``ω_k λ_k = k^{-νβ-1} / Z`` with ``Z`` such that
  ``tr ΩΛ = 1`` (source/capacity conditions of Eqs. 17/88).

The width-``N`` model
---------------------
The width-N model of Bordelon et al. (Eq. 14) sees features ``A x`` with ``A`` a rank-``N`` projection.
Its in-context preconditioner in ``D``-space is a rotated projection, and with RRS data the
population loss of the reduced model depends on one scalar ``gamma``:

.. math::

    \\begin{gathered}
    \\mathcal L(\\gamma) = \\mathrm{tr}\\,\\Big\\langle \\Lambda\\, p(M)\\, \\Omega\\, p(M)^\\top \\Big\\rangle,\\\\
    M = c\\,U U^\\top \\hat\\Sigma,\\qquad p(x) = (1 - \\gamma x / L)^L,
    \\end{gathered}

where ``U`` (``D x N``) has Haar-distributed orthonormal columns, ``hat Sigma`` is the context's
empirical covariance (``Lambda`` when the context length ``P`` is infinite) and ``tr`` is the
normalised trace ``(1/D) Tr``.

Normalisation (a documented choice of the book). We take ``c = D/N`` so that the preconditioner
is ``Gamma_D = gamma (D/N) U U^T``: at ``N = D`` it is ``gamma I`` and the top eigenvalue of ``M``
stays O(1) for every ``N``. The paper's F.4 uses ``c = 1`` (``(A^T A)^2`` a rank-``N`` projection),
i.e. ``gamma_paper = gamma D / N``. Losses at the optimum and the ``t -> infinity`` bottlenecks do
not depend on this choice; the ``gamma`` axis and the gradient-flow clock do.

This file imports nothing: import from the modules.
"""
