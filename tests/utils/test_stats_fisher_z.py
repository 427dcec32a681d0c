"""Fisher's z-transform of a sample correlation (iclcore.stats.fisher_z)."""

import numpy as np
import pytest

from iclcore.stats import fisher_z


def test_fisher_z_is_normal_with_the_stated_standard_error() -> None:
    """Bivariate normal pairs with rho = 0.5, n = 40: over 4000 seeded samples z has mean artanh(rho) and
    standard deviation close to 1 / sqrt(n - 3) (the transform's own bias is rho / (2 (n - 1)))."""
    rng = np.random.default_rng(0)
    rho, n = 0.5, 40
    cov = np.array([[1.0, rho], [rho, 1.0]])
    xy = rng.multivariate_normal(np.zeros(2), cov, size=(4000, n))
    r = np.array([np.corrcoef(s[:, 0], s[:, 1])[0, 1] for s in xy])
    z = np.array([fisher_z(ri, n)[0] for ri in r])
    se = fisher_z(0.0, n)[1]
    assert se == 1 / np.sqrt(37)
    assert abs(z.mean() - np.arctanh(rho) - rho / (2 * (n - 1))) < 4 * se / np.sqrt(z.size)
    assert abs(z.std(ddof=1) / se - 1) < 0.05


def test_fisher_z_is_odd_and_names_bad_input() -> None:
    assert fisher_z(-0.3, 10)[0] == -fisher_z(0.3, 10)[0]
    with pytest.raises(ValueError, match="r:"):
        fisher_z(1.5, 10)
    with pytest.raises(ValueError, match="r:"):
        fisher_z(float("nan"), 10)
    with pytest.raises(ValueError, match="n"):
        fisher_z(0.1, 3)
