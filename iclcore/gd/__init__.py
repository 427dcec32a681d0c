"""Nagy (Nagy, "When in-context learning implements gradient descent"): the scalar identity
families (:mod:`.statements`, :mod:`.scalar_statements`, :mod:`.appendix_statements`) and our
matrix lifts (:mod:`.matrix_lifts`), collected and checked in :mod:`.identities`; the von Oswald
et al. (2023) construction as explicit attention weights (:mod:`.construction`), the §8.1 synthetic panel (:mod:`.synthetic`) and
an offline miniature of the depth-contraction probe (:mod:`.depth_probe`)."""
