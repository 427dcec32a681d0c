"""The claims ledger (``book/reported/*.yml``): schema, basis labels, coverage of the papers, standard errors.

* Every row loads (the schema is checked by ``iclbook.ledger.Claim``) and carries a ``basis``.
* Coverage: every "Figure N"/"Fig. N" and "Table N" of each paper's text has at least one row of that paper
  (rows of kind ``absent`` count, so a figure nobody reproduces yet is listed, not hidden).
* Every stochastic row (kind ``within_se`` or ``stochastic: true``) names its standard error, the notebook
  writes that key, and, when the notebook has been run, ``metrics.json`` holds it.
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from pathlib import Path

import pytest

from iclbook.ledger import load_claims, load_metrics

ROOT = Path(__file__).resolve().parents[2]
REPORTED = ROOT / "book" / "reported"
GENERATED = ROOT / "book" / "generated"
SEEDS_DIR = Path(os.environ.get("ICL_SEEDS_DIR", ROOT.parent / "shared" / "seeds"))

CLAIMS = load_claims(REPORTED)

_REF = re.compile(r"\b(Fig(?:ure)?s?\.?|Tables?)\s*((?:\d+[A-Za-z]?(?:\([a-z]\))?(?:\s*(?:,|and|&|–|-)\s*(?=\d))?)+)")


def figure_table_refs(text: str) -> set[str]:
    """``{"Figure 3", "Table 2", ...}`` named in ``text`` (Fig./Figs./Figure(s), lists and ranges N–M)."""
    refs = set()
    for m in _REF.finditer(text):
        word = "Table" if m.group(1).startswith("Table") else "Figure"
        body = m.group(2)
        for a, b in re.findall(r"(\d+)[A-Za-z]?(?:\([a-z]\))?\s*[–-]\s*(\d+)", body):
            refs.update(f"{word} {n}" for n in range(int(a), int(b) + 1))
        refs.update(f"{word} {n}" for n in re.findall(r"\d+", body))
    return refs


def seed_texts() -> dict[str, str]:
    if not SEEDS_DIR.is_dir():
        pytest.skip(f"the papers' texts are not at {SEEDS_DIR} (set ICL_SEEDS_DIR)")
    texts = {}
    for path in sorted(SEEDS_DIR.glob("00[0-4]_*.txt")):
        texts[path.name[:3]] = path.read_text(errors="replace")
    return texts


# ------------------------------------------------------------------ the reference extractor itself
@pytest.mark.parametrize(
    "text, refs",
    [
        ("see Figure 3 and Table 2.", {"Figure 3", "Table 2"}),
        ("§3, Fig. 2A; Fig. 4(b) caption", {"Figure 2", "Figure 4"}),
        ("Figures 4 and 5", {"Figure 4", "Figure 5"}),
        ("Figs. 1–3, Tables 1, 4", {"Figure 1", "Figure 2", "Figure 3", "Table 1", "Table 4"}),
        ("Fig. 8a (formula §3.1)", {"Figure 8"}),
        ("Eq. 3, Result 2", set()),
    ],
)
def test_figure_table_refs(text, refs) -> None:
    assert figure_table_refs(text) == refs


# ------------------------------------------------------------------ basis labels
def test_absent_rows_say_where_or_why() -> None:
    for c in CLAIMS:
        if c.basis == "absent":
            assert re.search(r"chapter|notebook|issue|out of scope", c.basis_note, re.I), (
                f"{c.source}: {c.label}: an absent row names the chapter that will cover it or 'out of scope: why'"
            )


# ------------------------------------------------------------------ coverage of figures and tables
def test_every_paper_has_its_text() -> None:
    assert set(seed_texts()) == {"000", "001", "002", "003", "004"}


@pytest.mark.parametrize(
    "seed",
    ["000", "001", "002", "003", "004"],
)
def test_every_figure_and_table_has_a_row(seed: str) -> None:
    text = seed_texts().get(seed)
    if text is None:
        pytest.skip(f"no text for paper {seed}")
    wanted = figure_table_refs(text)
    covered = set().union(*[figure_table_refs(c.section) for c in CLAIMS if c.seed == seed] or [set()])
    missing = sorted(wanted - covered, key=lambda r: (r.split()[0], int(r.split()[1])))
    assert not missing, f"paper {seed}: no ledger row (not even an absent one) for {missing}"


# ------------------------------------------------------------------ metrics and standard errors
def test_every_stochastic_row_names_its_standard_error() -> None:
    bad = [c.label for c in CLAIMS if (c.kind == "within_se" or c.stochastic) and not c.se]
    assert not bad, f"stochastic rows without `se`: {bad}"


#: Notebooks whose graded quantities are functions of trained models (SGD/Adam runs): every row of theirs
#: that is not a theorem, a construction or an erratum is random, so it has a standard error or says why not.
TRAINED = ("gd_probe", "logistic_probes", "flexformer_decoder", "flexformer_encdec", "pde_galerkin")


def test_random_rows_have_a_standard_error_or_say_why_not() -> None:
    bad = [
        c.label
        for c in CLAIMS
        if c.notebook in TRAINED
        and c.basis not in ("theorem", "construction", "erratum")
        and not (c.stochastic or c.no_se)
    ]
    assert not bad, f"random rows with neither `se` nor `no_se`: {bad}"


@pytest.mark.parametrize("notebook", sorted({c.notebook for c in CLAIMS if c.stochastic}))
def test_stochastic_rows_have_their_standard_error_in_metrics(notebook: str) -> None:
    metrics = load_metrics(GENERATED, notebook)
    if metrics is None:
        pytest.skip(f"{notebook} has not been run (book/generated/{notebook}/metrics.json)")
    lacking = defaultdict(list)
    for c in CLAIMS:
        if c.notebook == notebook and c.stochastic:
            for k in c.se:
                if k not in metrics:
                    lacking[c.label].append(k)
                elif not isinstance(metrics[k], (int, float)) or isinstance(metrics[k], bool) or metrics[k] < 0:
                    lacking[c.label].append(f"{k} (not a standard error: {metrics[k]!r})")
    assert not lacking, f"{notebook}: stochastic rows whose standard error is not in metrics.json: {dict(lacking)}"


# ------------------------------------------------------------------ stable row ids
def test_every_row_has_a_stable_id_named_after_its_file() -> None:
    """Notes, errata and tests cite rows by id (``decoder-07``): every row has one, prefixed by its file's stem.

    Uniqueness across the ledger is enforced by :func:`iclbook.ledger.load_claims` itself.
    """
    bad = [c.label for c in CLAIMS if not c.id.startswith(Path(c.source).stem + "-")]
    assert not bad, f"rows without an id named after their file: {bad[:5]}"


def test_a_reused_id_is_refused(tmp_path: Path) -> None:
    from iclbook.ledger import ReportError

    row = "- id: x-01\n  claim: c\n  reported: 1\n  seed: '000'\n  section: s\n  kind: absent\n  basis: absent\n  basis_note: later\n"
    (tmp_path / "x.yml").write_text(row + row.replace("claim: c", "claim: d"))
    with pytest.raises(ReportError, match="x-01.*used twice"):
        load_claims(tmp_path)


# ------------------------------------------------------------------ power of the predicted rules
#: The metrics every `predicted` and `underpowered` rule and its alternative read, those a diagnosis cites as
#: evidence, and those of every row with a `spread` (its standard error and its rule on independent runs),
#: copied from a quick-preset build (`rule_metric_names` of each row); the power test reads book/generated when
#: a notebook has run there.
QUICK_RULE_METRICS = Path(__file__).parent / "fixtures" / "quick_rule_metrics.json"


def _rule_metrics(notebook: str) -> dict:
    import json

    built = load_metrics(GENERATED, notebook)
    return built if built is not None else json.loads(QUICK_RULE_METRICS.read_text()).get(notebook, {})


def test_every_predicted_and_underpowered_row_states_its_alternative() -> None:
    from iclbook.ledger import ALTERNATIVE_REQUIRED

    bad = [c.label for c in CLAIMS if c.basis in ALTERNATIVE_REQUIRED and c.alternative is None]
    assert not bad, f"rows without the alternative their rule must reject: {bad}"


@pytest.mark.parametrize("row", [c.id for c in CLAIMS if c.basis == "predicted"])
def test_every_predicted_rule_rejects_its_alternative_with_power_0_8(row: str) -> None:
    from iclbook.power import POWER_MIN, AlternativeError, rule_power

    c = next(c for c in CLAIMS if c.id == row)
    try:
        p = rule_power(c, c.alternative, _rule_metrics(c.notebook))
    except AlternativeError as exc:
        pytest.fail(f"{c.label}: the power against its alternative cannot be computed: {exc}")
    assert p.power >= POWER_MIN, (
        f"{c.label}: power {p.describe()} against '{c.alternative.text}' is below {POWER_MIN}: tighten the rule "
        "or relabel the row 'underpowered' with its reason"
    )


@pytest.mark.parametrize("row", [c.id for c in CLAIMS if c.basis == "predicted"])
def test_every_predicted_rule_keeps_power_0_8_at_the_paper_preset_of_the_record(row: str) -> None:
    """The same power, at the metrics of the committed paper-preset run (``record/paper/<notebook>``): a rule whose
    error is larger at the papers' sizes must still reject its alternative there."""
    from iclbook.power import POWER_MIN, AlternativeError, rule_power

    c = next(c for c in CLAIMS if c.id == row)
    metrics = load_metrics(ROOT / "record" / "paper", c.notebook)
    if metrics is None:
        pytest.skip(f"{c.notebook} has no paper-preset run in the record")
    try:
        p = rule_power(c, c.alternative, metrics)
    except AlternativeError as exc:
        pytest.fail(f"{c.label}: the power at the paper preset cannot be computed: {exc}")
    assert p.power >= POWER_MIN, f"{c.label}: power {p.describe()} at the paper preset is below {POWER_MIN}"


def test_underpowered_rows_say_why() -> None:
    bad = [c.label for c in CLAIMS if c.basis == "underpowered" and not re.search(r"power", c.basis_note, re.I)]
    assert not bad, f"underpowered rows whose basis_note does not state the power or why it is not computable: {bad}"


# ------------------------------------------------------------------ evidence behind every diagnosis
@pytest.mark.parametrize("row", [c.id for c in CLAIMS if c.diagnosis and c.diagnosis != "open"])
def test_every_diagnosis_has_the_evidence_it_needs(row: str) -> None:
    """A setting, finite-size, fixed, erratum or reading diagnosis cites runs in the repository (iclbook.evidence):
    without them the row is `open`."""
    from iclbook.evidence import errata_headings, evidence_problems, git_commit_exists

    c = next(c for c in CLAIMS if c.id == row)
    problems = evidence_problems(
        c,
        ROOT,
        _rule_metrics(c.notebook),
        {x.id for x in CLAIMS},
        errata_headings(ROOT / "book" / "errata"),
        lambda ref: git_commit_exists(ROOT, ref),
    )
    assert not problems, f"{c.label} ({c.diagnosis}): " + "; ".join(problems)


def test_the_intro_counts_every_basis_so_its_counts_add_up_to_the_total() -> None:
    """Each basis of the ledger appears in the intro's coverage paragraph, so its counts sum to ledger:total."""
    from iclbook.ledger import BASES

    intro = (Path(__file__).resolve().parents[2] / "book" / "intro.md").read_text()
    named = {"predicted": "ledger:predicted", "theorem": "ledger:theorems"}
    missing = [b for b in BASES if named.get(b, f"ledger:basis_{b.replace('-', '_')}") not in intro]
    assert not missing, f"book/intro.md does not count the rows of basis {missing}"
