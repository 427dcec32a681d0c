"""Generated pages: the ledger's schema and rules (``iclbook.ledger``), the report, errata and API pages."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from iclbook.errata import render_errata
from iclbook.ledger import Claim, ReportError, Row, compare, evaluate, load_claims
from iclbook.predicates import evaluate_predicate, parse_predicate, predicate_names
from iclbook.report import basis_status_table, render_report, summary_counts
from iclbook.sphinx_metrics import format_metric, format_param

DROP = object()


def row(**change) -> dict:
    d = {
        "notebook": "nb",
        "metric": "m",
        "claim": "c",
        "reported": 1.0,
        "seed": "000",
        "section": "§1",
        "kind": "max",
        "tolerance": 1.0,
        "basis": "predicted",
    }
    d.update(change)
    return {k: v for k, v in d.items() if v is not DROP}


def claim(kind: str, reported, tolerance=None, **extra) -> Claim:
    d = row(kind=kind, reported=reported, tolerance=tolerance, **extra)
    if tolerance is None:
        d.pop("tolerance")
    return Claim.from_dict(d, "test.yml")


@pytest.mark.parametrize(
    "kind, reported, tol, value, status",
    [
        ("rel", 0.576, 0.01, 0.5790, "reproduced"),  # 0.52 % off
        ("rel", 0.576, 0.01, 0.5900, "differs"),  # 2.4 % off
        ("abs", 1.0, 1e-3, 1.0009, "reproduced"),
        ("abs", 1.0, 1e-3, 1.0011, "differs"),
        ("exact", 3, None, 3, "reproduced"),
        ("exact", 3, None, 3.0000001, "differs"),
        ("max", 4.337e-18, 1e-12, 3e-16, "reproduced"),
        ("max", 4.337e-18, 1e-12, 2e-12, "differs"),
        ("min", 0.9, 0.95, 0.97, "reproduced"),
        ("min", 0.9, 0.95, 0.94, "differs"),
    ],
)
def test_compare_rules(kind, reported, tol, value, status) -> None:
    assert compare(claim(kind, reported, tol), value).status == status
    assert evaluate(claim(kind, reported, tol), {"m": value}).status == status


def test_missing_value_is_missing() -> None:
    assert compare(claim("rel", 1.0, 0.1), None).status == "missing"
    assert evaluate(claim("rel", 1.0, 0.1), None).status == "missing"


def test_numeric_rule_rejects_boolean_metric() -> None:
    assert compare(claim("max", 1.0, 1.0), True).status == "differs"


def test_relative_difference_is_signed_percentage() -> None:
    assert compare(claim("rel", 2.0, 0.5), 2.5).difference == "+25.00%"


# ------------------------------------------------------------------ within_se
def se_claim(reported=1.0, z=3, disc=0.0) -> Claim:
    return Claim.from_dict(
        row(kind="within_se", reported=reported, tolerance=DROP, se="m_se", z=z, discretisation=disc), "t.yml"
    )


@pytest.mark.parametrize(
    "value, se, disc, status",
    [
        (1.029, 0.01, 0.0, "reproduced"),
        (1.031, 0.01, 0.0, "differs"),
        (0.971, 0.01, 0.0, "reproduced"),
        (1.031, 0.01, 0.002, "reproduced"),
        (1.0, 0.0, 0.0, "reproduced"),
        (1.0 + 1e-9, 0.0, 0.0, "differs"),
    ],
)
def test_within_se_rule(value, se, disc, status) -> None:
    r = evaluate(se_claim(disc=disc), {"m": value, "m_se": se})
    assert r.status == status
    assert dict(r.used) == {"m": value, "m_se": se}


def test_within_se_shows_z_score_and_margin() -> None:
    r = evaluate(se_claim(), {"m": 1.02, "m_se": 0.01})
    assert "+2.00 SE" in r.difference and "margin +0.01" in r.difference


def test_within_se_without_its_standard_error_is_missing() -> None:
    assert evaluate(se_claim(), {"m": 1.0}).status == "missing"


# ------------------------------------------------------------------ predicates
def pred_claim(expr: str) -> Claim:
    return Claim.from_dict(
        row(kind="predicate", metric=DROP, tolerance=DROP, predicate=expr, reported="words"), "t.yml"
    )


@pytest.mark.parametrize(
    "expr, result",
    [
        ("a < 1 and b", True),
        ("abs(a - c) <= 3 * c", True),
        ("not b or a > 2", False),
        ("0 < a < c", True),
        ("0 < a < 0.4", False),
        ("all([a > 0, b]) and any((a > 5, c == 1))", True),
        ("max(a, c) / min(a, c) == 2", True),
        ("-a + 2 ** 2 >= 3.5", True),
    ],
)
def test_predicate_evaluates(expr, result) -> None:
    assert evaluate_predicate(expr, {"a": 0.5, "b": True, "c": 1.0}) is result


@pytest.mark.parametrize(
    "expr",
    [
        "a.b",
        "__import__('os')",
        "a[0]",
        "'x'",
        "min(a, key=b)",
        "lambda: 1",
        "[x for x in a]",
        "open(a)",
        "a if b else c",
        "(a := 1)",
        "a // 2",
        "a % 2",
        "f'{a}'",
        "min(*a)",
        "",
        "a <",
    ],
)
def test_predicate_whitelist_rejects(expr) -> None:
    with pytest.raises(ReportError, match="row 7"):
        parse_predicate(expr, "row 7")


def test_predicate_is_checked_when_the_ledger_is_loaded() -> None:
    with pytest.raises(ReportError, match="not allowed"):
        pred_claim("a.__class__")


def test_predicate_names_exclude_functions() -> None:
    assert predicate_names("abs(x - y) < max(z, x)") == ["x", "y", "z"]


def test_predicate_row_shows_values_used() -> None:
    r = evaluate(pred_claim("x / y > 10"), {"x": 100.0, "y": 2.0, "other": 1})
    assert r.status == "reproduced" and r.reproduced is True and r.used == (("x", 100.0), ("y", 2.0))
    text = render_report([r])
    assert "x = 100, y = 2" in text and "predicate `x / y > 10`" in text


def test_predicate_with_unknown_metric_is_missing() -> None:
    r = evaluate(pred_claim("x > 1 and nope"), {"x": 2.0})
    assert r.status == "missing" and "nope" in r.difference


def test_predicate_that_fails_or_is_not_boolean() -> None:
    assert evaluate(pred_claim("x > 3"), {"x": 2.0}).status == "differs"
    r = evaluate(pred_claim("x + 1"), {"x": 2.0})
    assert r.status == "differs" and "not true/false" in r.difference
    assert evaluate(pred_claim("x / y > 0"), {"x": 1.0, "y": 0.0}).status == "differs"


# ------------------------------------------------------------------ schema
@pytest.mark.parametrize(
    "change, message",
    [
        ({"kind": "approx"}, r"kind: 'approx' is not one of"),
        ({"kind": "qualitative"}, r"kind: 'qualitative' is not one of"),
        ({"kind": "rel", "tolerance": DROP}, "need a numeric tolerance"),
        ({"kind": "rel", "tolerance": None}, "None is not of type 'number'"),
        (
            {"kind": "rel", "tolerance": 0.1, "reported": "big"},
            "reported: kinds rel, abs, exact, within_se need a numeric",
        ),
        ({"colour": "red"}, r"\('colour' was unexpected\)"),
        ({"claim": DROP}, "'claim' is a required property"),
        ({"basis": DROP}, "'basis' is a required property"),
        ({"metric": DROP}, "need a metric"),
        ({"notebook": DROP}, "needs a notebook"),
        ({"basis": "guessed"}, "basis: 'guessed' is not one of"),
        ({"basis": "unlabelled"}, "basis: 'unlabelled' is not one of"),
        ({"basis": "calibrated"}, "needs a basis_note"),
        ({"basis": "other-model", "basis_note": "  "}, "needs a basis_note"),
        ({"basis": "erratum"}, "needs a basis_note"),
        ({"kind": "absent", "metric": DROP, "tolerance": DROP}, "go together"),
        ({"basis": "absent", "basis_note": "chapter x"}, "go together"),
        ({"seed": "007"}, "seed: '007' is not one of"),
        ({"seed": 0}, "seed: 0 is not one of"),
        ({"tolerance": math.inf}, "tolerance: inf is not a finite number"),
        ({"tolerance": math.nan}, "tolerance: nan is not a finite number"),
        ({"kind": "predicate", "tolerance": DROP, "metric": DROP}, "kind predicate needs a predicate"),
        ({"kind": "predicate", "tolerance": DROP, "predicate": "m > 1"}, "take no metric"),
        ({"predicate": "m > 1"}, "only kind predicate takes a predicate"),
        ({"stochastic": True}, "a stochastic row needs se"),
        ({"stochastic": "yes", "se": "s"}, "stochastic: 'yes' is not of type 'boolean'"),
        ({"stochastic": True, "se": "s", "no_se": "one run"}, "a stochastic row needs se .* and no no_se"),
        ({"kind": "within_se", "tolerance": DROP}, "needs exactly one se key"),
        ({"kind": "within_se", "tolerance": DROP, "se": ["s", "t"]}, "needs exactly one se key"),
        ({"kind": "within_se", "tolerance": DROP, "se": "s", "z": -1}, r"z: z must be a positive number \(got -1\)"),
        ({"kind": "within_se", "tolerance": DROP, "se": "s", "discretisation": -0.1}, "discretisation must"),
        ({"kind": "within_se", "tolerance": 0.1, "se": "s"}, "only kinds rel, abs, max, min take a tolerance"),
        ({"kind": "exact", "tolerance": 0.1}, "kind exact takes no tolerance but 0"),
        ({"z": 3}, "z and discretisation belong to kind within_se"),
        ({"id": "Decoder 7"}, "for example decoder-07"),
        ({"diagnosis": "bad luck", "diagnosis_note": "x"}, "diagnosis: 'bad luck' is not one of"),
        ({"diagnosis": "open"}, "go together"),
        ({"diagnosis_note": "grows with M"}, "go together"),
    ],
)
def test_malformed_claims(change, message) -> None:
    with pytest.raises(ReportError, match=message):
        Claim.from_dict(row(**change), "x.yml")


def test_an_error_names_the_file_the_row_and_the_field() -> None:
    with pytest.raises(ReportError, match=r"^x\.yml: row nb-07: tolerance: 'tight' is not of type 'number'"):
        Claim.from_dict(row(id="nb-07", kind="rel", tolerance="tight"), "x.yml")
    with pytest.raises(ReportError, match=r"^x\.yml: row nb-07: predicate: predicate 'm\.x'"):
        Claim.from_dict(row(id="nb-07", kind="predicate", metric=DROP, tolerance=DROP, predicate="m.x"), "x.yml")


def test_a_ledger_file_error_names_the_line_and_the_row_id(tmp_path: Path) -> None:
    (tmp_path / "a.yml").write_text(
        "- {id: a-01, notebook: nb, metric: m, claim: c, reported: 2.0, seed: '000', section: s, kind: rel,\n"
        "   tolerance: 0.1, basis: predicted}\n"
        "- {id: a-02, notebook: nb, metric: m, claim: c, reported: 2.0, seed: '000', section: s, kind: max,\n"
        "   basis: predicted}\n"
    )
    with pytest.raises(ReportError, match=r"^book/reported/a\.yml:3: \[1\] \(id a-02\): kinds rel, abs, max, min need"):
        load_claims(tmp_path)


def test_absent_row_needs_no_notebook_and_is_absent() -> None:
    c = Claim.from_dict(
        row(
            kind="absent",
            basis="absent",
            basis_note="chapter Flexformer",
            notebook=DROP,
            metric=DROP,
            tolerance=DROP,
            reported="Table 4",
        ),
        "x.yml",
    )
    r = evaluate(c, None)
    assert r.status == "absent"
    text = render_report([r])
    assert "Not reproduced yet" in text and "chapter Flexformer" in text


# ------------------------------------------------------------------ rendering
def test_headline_counts_predicted_rows_only() -> None:
    rows = [
        evaluate(claim("max", 1.0, 1.0), {"m": 0.5}),  # predicted, passes
        evaluate(claim("max", 1.0, 1.0), {"m": 2.0}),  # predicted, fails
        evaluate(claim("max", 1.0, 1.0, basis="theorem"), {"m": 0.5}),  # identity
        evaluate(claim("max", 1.0, 1.0, basis="calibrated", basis_note="M from 0.163"), {"m": 0.5}),
        evaluate(claim("max", 1.0, 1.0, basis="construction"), {"m": 0.5}),
        evaluate(claim("max", 1.0, 1.0), None),  # missing
    ]
    c = summary_counts(rows)
    assert (c["reproduced"], c["predicted"], c["identities"], c["theorems"], c["missing"]) == (1, 3, 1, 1, 1)
    text = render_report(rows)
    assert (
        "**1 reproduced** of 3 predicted claims · **1 identities verified** of 1 · 0 absent · 0 out of scope · 1 missing"
        in text
    )
    assert "✓ matches (calibrated)" in text and "✓ identity verified" in text
    table = basis_status_table(rows)
    assert "| predicted | 1 | 1 | 1 | 0 | 3 |" in table and "| calibrated | 1 | 0 | 0 | 0 | 1 |" in table


def test_report_opens_with_basis_table_per_paper() -> None:
    rows = [evaluate(claim("max", 1.0, 1.0), {"m": 0.5}), evaluate(claim("max", 1.0, 1.0, seed="001"), {"m": 0.5})]
    text = render_report(rows)
    assert text.index("## Paper 000") < text.index("## Paper 001") < text.index("## By notebook")


def test_load_claims_and_render(tmp_path: Path) -> None:
    (tmp_path / "a.yml").write_text(
        "- {notebook: nb, metric: m, claim: 'a | b', reported: 2.0, seed: '000', section: '§1', kind: rel,"
        " tolerance: 0.1, basis: predicted}\n"
    )
    claims = load_claims(tmp_path)
    text = render_report([compare(claims[0], 2.1), compare(claims[0], None)])
    assert "**1 reproduced** of 2 predicted claims" in text and "1 missing" in text
    assert "a \\| b" in text  # table cells are escaped


def test_load_claims_rejects_non_list(tmp_path: Path) -> None:
    (tmp_path / "a.yml").write_text("notebook: nb\n")
    with pytest.raises(ReportError, match=r"^book/reported/a\.yml:1: .* is not of type 'array'"):
        load_claims(tmp_path)


def test_errata_in_book_order(tmp_path: Path) -> None:
    for stem in ("zeta", "alpha", "mid"):
        (tmp_path / f"{stem}.md").write_text(f"## {stem}\n")
    text = render_errata(tmp_path, ["mid", "zeta"])
    assert text.index("## mid") < text.index("## zeta") < text.index("## alpha")


@pytest.mark.parametrize(
    "value, spec, text",
    [
        (True, "", "yes"),
        (False, "", "no"),
        (7, "", "7"),
        (12345, "", "12,345"),
        (0.123456, "", "0.123"),
        (4.337e-18, ".2e", "4.34×10⁻¹⁸"),
        (-0.5, ".3f", "−0.500"),
        (0.25, "percent", "25.0%"),
        ("cpu", "", "cpu"),
        ("cpu", ">5", "  cpu"),
    ],
)
def test_format_metric(value, spec, text) -> None:
    assert format_metric(value, spec) == text


@pytest.mark.parametrize(
    "value, spec, text",
    [
        (128, "", "128"),
        (0.1, "", "0.1"),
        (4096, ",", "4096"),
        (40960, ",", "40,960"),
        (1e-06, "", "1×10⁻⁶"),
        (True, "", "True"),
        (0.5, ".2f", "0.50"),
        ([50, 200], "", "50, 200"),
        ((0.5, 2.0), ".1f", "0.5, 2.0"),
    ],
)
def test_format_param(value, spec, text) -> None:
    assert format_param(value, spec) == text


def test_ledger_counts_for_the_metric_role() -> None:
    from iclbook.report import ledger_counts

    rows = [
        evaluate(claim("max", 1.0, 1.0), {"m": 0.5}),
        evaluate(claim("max", 1.0, 1.0, seed="001", basis="theorem"), {"m": 2.0}),
    ]
    c = ledger_counts(rows)
    assert c["total"] == 2 and c["reproduced"] == 1 and c["basis_theorem"] == 1 and c["seed001_theorems"] == 1
    assert c["seed000_reproduced"] == 1 and c["status_differs"] == 1 and c["basis_other_model"] == 0
    assert all(isinstance(v, int) for v in c.values())


def test_paper_column_from_a_stored_paper_run(tmp_path) -> None:
    """A verified store entry under the current paper key adds a second value and status beside the quick one."""
    import hashlib
    import json
    import shutil

    from iclbook.notebooks import discover_all
    from iclbook.report import ledger_counts, paper_metrics, paper_rows, report_rows
    from iclbook.runs import make_requests
    from iclbook.store import STAMP, cache_key, store_dir

    root = tmp_path / "proj"
    shutil.copytree(Path(__file__).parents[1] / "fixtures" / "demo_project", root)
    (root / "book" / "reported").mkdir(parents=True)
    (root / "book" / "reported" / "demo.yml").write_text(
        "- notebook: demo\n  metric: n\n  claim: 'enough points'\n  reported: 100\n  seed: '000'\n  section: '§1'\n"
        "  kind: min\n  tolerance: 100\n  basis: predicted\n  note: 'a test row'\n"
        "- notebook: demo\n  metric: max\n  claim: 'peak one'\n  reported: 1.0\n  seed: '000'\n  section: '§1'\n"
        "  kind: abs\n  tolerance: 0.01\n  basis: theorem\n"
    )
    generated = root / "book" / "generated"
    (generated / "demo").mkdir(parents=True)
    (generated / "demo" / "metrics.json").write_text(json.dumps({"n": 50, "max": 0.9995, "ok": True}))
    (generated / "demo" / STAMP).write_text(json.dumps({"preset": "quick"}))
    rows = report_rows(root, generated)
    assert [r.status for r in rows] == ["differs", "reproduced"]
    assert paper_metrics(root, generated, ["demo"]) == {}  # no store yet: no paper column
    assert "paper preset" not in render_report(rows, paper=paper_rows(rows, {}))

    # a fake store entry for the key `icl-book run demo --preset paper` would use now
    nb = next(n for n in discover_all(root)[0] if n.name == "demo")
    key = cache_key(make_requests([nb], generated, "paper")[0], root)
    entry = store_dir(root) / "entries" / key
    entry.mkdir(parents=True)
    metrics = json.dumps({"n": 500, "max": 0.99999, "ok": True}).encode()
    (entry / "metrics.json").write_bytes(metrics)
    (entry / STAMP).write_text(
        json.dumps(
            {
                "key": key,
                "notebook": "demo",
                "preset": "paper",
                "seconds": 1.0,
                "files": {"metrics.json": hashlib.sha256(metrics).hexdigest()},
            }
        )
    )
    paper = paper_rows(rows, paper_metrics(root, generated, ["demo"]))
    assert [p.status for p in paper] == ["reproduced", "reproduced"] and paper[0].reproduced == 500
    text = render_report(rows, paper=paper)
    assert (
        "At the **paper preset** (1 notebook(s) with a paper-size run, 2 rows): **1 reproduced** of 1 predicted claims (quick: 0)"
        in text
    )
    assert "1 row(s) change status between the sizes" in text
    table = [ln for ln in text.splitlines() if ln.startswith("| 1 |")][0]
    assert "✗ differs" in table and "✓ reproduced" in table and "| 50 |" in table and "| 500 |" in table
    c = ledger_counts(rows, paper)
    assert (c["reproduced"], c["paper_reproduced"], c["paper_identities"]) == (0, 1, 1)

    # a changed file in the entry, or a book built at the paper preset itself: no paper column
    (entry / "metrics.json").write_bytes(metrics.replace(b"500", b"501"))
    assert paper_metrics(root, generated, ["demo"]) == {}
    (entry / "metrics.json").write_bytes(metrics)
    (generated / "demo" / STAMP).write_text(json.dumps({"preset": "paper"}))
    assert paper_metrics(root, generated, ["demo"]) == {}


def test_out_of_scope_rows_are_counted_apart_from_absent_ones() -> None:
    def uncomputed(basis: str) -> Row:
        c = Claim.from_dict(
            row(
                kind="absent",
                basis=basis,
                basis_note="needs Pythia weights",
                notebook=DROP,
                metric=DROP,
                tolerance=DROP,
            ),
            "x.yml",
        )
        return evaluate(c, None)

    rows = [uncomputed("absent"), uncomputed("out-of-scope"), uncomputed("out-of-scope")]
    c = summary_counts(rows)
    assert (c["absent"], c["out_of_scope"]) == (1, 2)
    text = render_report(rows)
    assert "## Out of scope" in text and "## Not reproduced yet" in text
    assert text.count("needs Pythia weights") == 3


def test_ids_and_diagnoses_are_shown_in_the_report() -> None:
    c = Claim.from_dict(
        row(id="x-07", diagnosis="finite-size", diagnosis_note="the gap halves as M doubles (chapter figure)"),
        "x.yml",
    )
    assert c.label.startswith("x-07 (")
    r = evaluate(c, {"m": 99.0})
    assert r.status == "differs"
    text = render_report([r])
    assert "| x-07 | ✗ differs · finite-size |" in text
    assert "- **x-07.**" in text and "*Diagnosis (finite-size):* the gap halves" in text


def test_report_shows_the_power_against_the_alternative_beside_the_verdict() -> None:
    from iclbook.report import rule_powers

    strong = Claim.from_dict(
        row(id="x-01", kind="within_se", se="m_se", tolerance=DROP, alternative={"text": "off by 10 %", "rel": 0.1}),
        "x.yml",
    )
    weak = Claim.from_dict(
        row(id="x-02", kind="abs", tolerance=0.5, alternative={"text": "off by 0.1", "shift": 0.1, "se": "m_se"}),
        "x.yml",
    )
    metrics = {"m": 1.0, "m_se": 0.01}
    rows = [evaluate(strong, metrics), evaluate(weak, metrics)]
    powers = rule_powers(rows, {"nb": metrics})
    assert powers[id(rows[0])].power > 0.99 and powers[id(rows[1])].power < 1e-6
    text = render_report(rows, powers=powers)
    assert "power against the alternative" in text
    assert "**1.00** against: off by 10 %" in text
    assert "**0.00** ⚠ below 0.8 against: off by 0.1" in text
    assert "*Power:* 1.00 (analytic" in text


def test_paper_preset_power_follows_the_paper_preset_status() -> None:
    from iclbook.report import paper_rows, rule_powers

    c = Claim.from_dict(
        row(id="x-01", kind="within_se", se="m_se", tolerance=DROP, alternative={"text": "off by 10 %", "rel": 0.1}),
        "x.yml",
    )
    quick, paper_m = {"m": 1.0, "m_se": 0.01}, {"m": 1.0, "m_se": 0.05}
    rows = [evaluate(c, quick)]
    paper = paper_rows(rows, {"nb": paper_m})
    powers = {**rule_powers(rows, {"nb": quick}), **rule_powers(paper, {"nb": paper_m})}
    assert powers[id(paper[0])].power < powers[id(rows[0])].power  # a larger SE at the paper preset: less power
    text = render_report(rows, paper=paper, powers=powers)
    assert f"✓ reproduced · power {powers[id(paper[0])].power:.2f} |" in text


def test_power_of_a_row_whose_notebook_has_not_run_is_said_not_computed() -> None:
    from iclbook.report import rule_powers

    c = Claim.from_dict(row(alternative={"text": "off by 0.1", "shift": 0.1, "se": 0.01}), "x.yml")
    r = evaluate(c, None)
    assert rule_powers([r], {"nb": None})[id(r)].startswith("not computed")


def test_figure_provenance_line() -> None:
    """The line under each figure (iclbook.sphinx_figures): notebook, setting, regenerate command, key."""
    from iclbook.sphinx_figures import provenance, saved_stems

    quick = {"K": 16, "M": 128, "name": "a", "warmups": (50, 200), "tol": 1e-5}
    manifest = {"notebook": "decoder_outer", "preset": "quick", "key": "3f9a1c2e" + "0" * 56, "params": dict(quick)}
    manifest["params"]["warmups"] = [50, 200]  # a JSON manifest holds a tuple default as a list: not a change
    p = provenance(manifest, quick, quick)
    assert p.text("fig1") == (
        "notebook decoder_outer · preset quick · regenerate: .venv/bin/icl-book run decoder_outer"
        " · PNG · PDF · key 3f9a1c2e"
    )
    changed = dict(manifest, params=dict(manifest["params"], K=64, M=480, name="b c", warmups=[1, 2]))
    p = provenance(changed, quick, quick)
    assert p.setting() == "preset quick (K = 64, M = 480, name = b c, warmups = 1, 2 differ from quick)"
    assert p.command == (".venv/bin/icl-book run decoder_outer -p K 64 -p M 480 -p name 'b c' -p warmups '[1, 2]'")
    # the paper preset: the command names the preset, and -p only what differs from it
    paper = dict(quick, K=64, M=480)
    p = provenance(dict(manifest, preset="paper", params=dict(manifest["params"], K=64, M=480, tol=1e-6)), quick, paper)
    assert p.command == ".venv/bin/icl-book run decoder_outer --preset paper -p tol 1e-06"
    assert p.setting() == "preset paper (K = 64, M = 480, tol = 1×10⁻⁶ differ from quick)"
    assert provenance(dict(manifest, params={"K": 64}), None).command == ".venv/bin/icl-book run decoder_outer"
    assert saved_stems('save_figure(fig, "fig1_a")\nsave_figure(fig, stem)') == (["fig1_a"], True)
