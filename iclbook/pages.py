"""Pages the build generates: the Reproduction report, Errata and decisions, the API reference.

The reproduction report joins the papers' reported values (``book/reported/*.yml``)
with the numbers the notebooks computed (``book/generated/<notebook>/metrics.json``).
The status of each row is computed here from the numbers, never typed.
"""

from __future__ import annotations

import importlib.util
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .architecture import LAYERS, declared_all
from .measurements import render_measurements
from .notebooks import toc_order
from .predicates import (  # noqa: F401 (re-exported: the report's rules and their callers)
    PREDICATE_FUNCTIONS,
    ReportError,
    evaluate_predicate,
    parse_predicate,
    predicate_names,
)

KINDS = ("exact", "rel", "abs", "max", "min", "within_se", "predicate", "absent")
LEGACY_KINDS = ("qualitative",)  # a boolean metric computed in the notebook; being replaced by `predicate`
BASES = (
    "predicted",
    "underpowered",
    "calibrated",
    "construction",
    "theorem",
    "erratum",
    "other-model",
    "absent",
    "out-of-scope",
)
#: Bases of rows that no notebook computes (kind ``absent``): not reproduced yet, or impossible offline.
UNCOMPUTED = ("absent", "out-of-scope")
#: Why a rule that could disagree does not reproduce (issue: every "differs" is explained).
#: ``reading``: the row grades a reading of the paper that the errata does not adopt; the adopted reading is
#: graded by its own row (named in the evidence).
DIAGNOSES = ("fixed", "erratum", "finite-size", "setting", "reading", "open")
#: A row id: the ledger file's stem, a dash, a number never reused (``decoder-07``).
ROW_ID = re.compile(r"^[a-z][a-z0-9_]*-[0-9]{2,3}$")
UNLABELLED = "unlabelled"  # default for rows written before `basis` existed; tests/book/test_ledger.py flags it
NOTE_REQUIRED = ("underpowered", "calibrated", "other-model", "erratum", "absent", "out-of-scope")
#: Bases whose rows must state the alternative their rule rejects (iclbook.power): a rule that cannot fail
#: is no reproduction, and an underpowered row shows how weak its rule is.
ALTERNATIVE_REQUIRED = ("predicted", "underpowered")
SEEDS = ("000", "001", "002", "003", "004")
REQUIRED = ("claim", "reported", "seed", "section", "kind")
OPTIONAL = (
    "id",
    "notebook",
    "metric",
    "tolerance",
    "se",
    "z",
    "discretisation",
    "predicate",
    "stochastic",
    "no_se",
    "basis",
    "basis_note",
    "note",
    "diagnosis",
    "diagnosis_note",
    "alternative",
    "depends_on",
    "evidence",
)
#: Bases whose rows get a robustness band from the sweeps; they may declare ``depends_on``.
SWEPT_BASES = ("predicted", "underpowered", "calibrated")


# --------------------------------------------------------------------------- claims
def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


@dataclass(frozen=True)
class Claim:
    """One claim of a paper (a row of ``book/reported/*.yml``) with the rule that decides it."""

    claim: str
    reported: Any
    seed: str
    section: str
    kind: str
    basis: str
    source: str
    notebook: str = ""
    metric: str = ""
    tolerance: float | None = None
    se: tuple[str, ...] = ()
    z: float = 3.0
    discretisation: float = 0.0
    predicate: str = ""
    stochastic: bool = False
    no_se: str = ""
    basis_note: str = ""
    note: str = ""
    id: str = ""
    diagnosis: str = ""
    diagnosis_note: str = ""
    alternative: Any = None  # an iclbook.power.Alternative: what the rule must reject
    depends_on: tuple[str, ...] | None = None  # the swept settings the metric depends on (None: not declared)
    evidence: tuple[Any, ...] = ()  # iclbook.evidence.Reference: the runs behind the diagnosis

    @property
    def label(self) -> str:
        """The row id and ``notebook:metric`` (or the predicate, or the claim for absent rows), for messages."""
        if self.id:
            return f"{self.id} ({self._target()})"
        return self._target()

    def _target(self) -> str:
        target = self.metric or (f"[{self.predicate}]" if self.predicate else "")
        return f"{self.notebook}:{target}" if self.notebook else f"(absent) {self.claim[:50]}"

    @classmethod
    def from_dict(cls, d: dict[str, Any], source: str) -> Claim:
        if not isinstance(d, dict):
            raise ReportError(f"{source}: each entry must be a mapping, got {type(d).__name__}")
        where = f"{source}: entry {d.get('notebook')}:{d.get('metric') or d.get('predicate') or d.get('claim')}"
        missing = [k for k in REQUIRED if k not in d]
        unknown = sorted(set(d) - set(REQUIRED) - set(OPTIONAL))
        if missing:
            raise ReportError(f"{where}: missing fields {missing}")
        if unknown:
            raise ReportError(f"{where}: unknown fields {unknown}; allowed: {list(REQUIRED + OPTIONAL)}")
        kind = d["kind"]
        if kind not in KINDS + LEGACY_KINDS:
            raise ReportError(f"{where}: kind {kind!r} is not one of {KINDS}")
        basis = d.get("basis", UNLABELLED)
        if basis not in BASES + (UNLABELLED,) or (basis == UNLABELLED and "basis" in d):
            raise ReportError(f"{where}: basis {basis!r} is not one of {BASES}")
        if (kind == "absent") != (basis in UNCOMPUTED):
            raise ReportError(
                f"{where}: kind 'absent' and basis 'absent' or 'out-of-scope' go together "
                f"(got kind {kind!r}, basis {basis!r})"
            )
        row_id = str(d.get("id") or "")
        if "id" in d and not ROW_ID.match(row_id):
            raise ReportError(f"{where}: id {d['id']!r} is not of the form 'chapter-NN' (for example decoder-07)")
        diagnosis, diagnosis_note = str(d.get("diagnosis") or ""), str(d.get("diagnosis_note") or "").strip()
        if "diagnosis" in d and diagnosis not in DIAGNOSES:
            raise ReportError(f"{where}: diagnosis {d['diagnosis']!r} is not one of {DIAGNOSES}")
        if bool(diagnosis) != bool(diagnosis_note):
            raise ReportError(f"{where}: diagnosis and diagnosis_note (its evidence) go together")
        if diagnosis and kind == "absent":
            raise ReportError(f"{where}: an absent row has no verdict to diagnose")
        basis_note = str(d.get("basis_note") or "").strip()
        if basis in NOTE_REQUIRED and not basis_note:
            raise ReportError(
                f"{where}: basis {basis!r} needs a basis_note (which setting, which erratum, why the "
                "model differs, or the chapter that will cover it)"
            )
        if str(d["seed"]) not in SEEDS:
            raise ReportError(f"{where}: seed {d['seed']!r} is not one of {SEEDS}")
        notebook, metric = str(d.get("notebook") or ""), str(d.get("metric") or "")
        if kind != "absent" and not notebook:
            raise ReportError(f"{where}: kind {kind!r} needs a notebook")
        if kind in ("exact", "rel", "abs", "max", "min", "within_se", "qualitative") and not metric:
            raise ReportError(f"{where}: kind {kind!r} needs a metric")
        if kind in ("predicate", "absent") and metric:
            raise ReportError(f"{where}: kind {kind!r} takes no metric (a predicate names its metrics)")
        tol = d.get("tolerance")
        if kind in ("rel", "abs", "max", "min"):
            if not _number(tol):
                raise ReportError(f"{where}: kind {kind!r} needs a numeric tolerance")
        elif tol is not None and not (kind == "exact" and tol == 0):
            raise ReportError(f"{where}: kind {kind!r} takes no tolerance")
        if kind in ("rel", "abs", "exact", "within_se") and not _number(d["reported"]):
            raise ReportError(f"{where}: kind {kind!r} needs a numeric reported value")
        predicate = d.get("predicate") or ""
        if kind == "predicate":
            parse_predicate(predicate, where)
        elif predicate:
            raise ReportError(f"{where}: only kind 'predicate' takes a predicate")
        se = d.get("se") or ()
        se = (se,) if isinstance(se, str) else tuple(se)
        if not all(isinstance(k, str) and k for k in se):
            raise ReportError(f"{where}: se must be a metric key or a list of metric keys")
        stochastic = d.get("stochastic", kind == "within_se")
        if not isinstance(stochastic, bool):
            raise ReportError(f"{where}: stochastic must be true or false")
        if kind == "within_se" and not stochastic:
            raise ReportError(f"{where}: a within_se row is stochastic")
        if stochastic and not se:
            raise ReportError(f"{where}: a stochastic row needs `se`: the metrics key(s) of its standard error")
        no_se = str(d.get("no_se") or "").strip()
        if no_se and stochastic:
            raise ReportError(f"{where}: no_se (why a random quantity has no standard error) excludes stochastic")
        if kind == "within_se" and len(se) != 1:
            raise ReportError(f"{where}: kind 'within_se' needs exactly one se key")
        z, disc = d.get("z", 3.0), d.get("discretisation", 0.0)
        if kind == "within_se":
            if not _number(z) or z <= 0:
                raise ReportError(f"{where}: z must be a positive number")
            if not _number(disc) or disc < 0:
                raise ReportError(f"{where}: discretisation must be a number >= 0")
        elif "z" in d or "discretisation" in d:
            raise ReportError(f"{where}: z and discretisation belong to kind 'within_se'")
        alternative = None
        if d.get("alternative") is not None:
            from .power import Alternative, AlternativeError

            if kind == "absent":
                raise ReportError(f"{where}: an absent row has no rule to have power")
            try:
                alternative = Alternative.from_dict(d["alternative"], where)
            except AlternativeError as exc:
                raise ReportError(str(exc)) from None
        evidence: tuple[Any, ...] = ()
        if d.get("evidence") is not None:
            from .evidence import EvidenceError, parse_evidence

            if not diagnosis:
                raise ReportError(f"{where}: evidence belongs to a diagnosis")
            try:
                evidence = parse_evidence(d["evidence"], where)
            except EvidenceError as exc:
                raise ReportError(str(exc)) from None
        depends_on = d.get("depends_on")
        if depends_on is not None:
            if not isinstance(depends_on, list) or not all(isinstance(x, str) and x for x in depends_on):
                raise ReportError(f"{where}: depends_on must be a list of swept setting names (may be empty)")
            if basis not in SWEPT_BASES:
                raise ReportError(f"{where}: depends_on belongs to the swept bases {SWEPT_BASES}, not {basis!r}")
            depends_on = tuple(depends_on)
        return cls(
            claim=str(d["claim"]),
            reported=d["reported"],
            seed=str(d["seed"]),
            section=str(d["section"]),
            kind=kind,
            basis=basis,
            source=source,
            notebook=notebook,
            metric=metric,
            tolerance=None if tol is None else float(tol),
            se=se,
            z=float(z),
            discretisation=float(disc),
            predicate=str(predicate),
            stochastic=stochastic,
            no_se=no_se,
            basis_note=basis_note,
            note=str(d.get("note", "") or "").strip(),
            id=row_id,
            diagnosis=diagnosis,
            diagnosis_note=diagnosis_note,
            alternative=alternative,
            depends_on=depends_on,
            evidence=evidence,
        )


@dataclass(frozen=True)
class Row:
    claim: Claim
    reproduced: float | bool | None
    difference: str
    status: str  # "reproduced" (the rule holds), "differs", "missing" or "absent"
    used: tuple[tuple[str, Any], ...] = ()  # the values a predicate or a within_se rule read


STATUSES = ("reproduced", "differs", "missing", "absent")


def load_claims(reported_dir: Path) -> list[Claim]:
    """The claims of every ledger file in ``reported_dir``, each file read through :mod:`iclbook.loaders`."""
    from .loaders import LEDGER, InputFileError, load_file

    claims = []
    for path in sorted(reported_dir.glob("*.yml")):
        try:
            data = load_file(path, LEDGER, f"book/reported/{path.name}") or []
        except InputFileError as exc:
            raise ReportError(str(exc)) from None
        claims.extend(Claim.from_dict(d, path.name) for d in data)
    seen: dict[str, str] = {}
    for c in claims:
        if c.id and c.id in seen:
            raise ReportError(f"{c.source}: row id {c.id!r} is used twice (also in {seen[c.id]}); ids are never reused")
        seen[c.id] = c.source
    return claims


def compare(claim: Claim, value: float | bool | None) -> Row:
    """Status of a single-metric ``claim`` (kinds exact/rel/abs/max/min/qualitative) against ``value``."""
    if claim.kind == "absent":
        return Row(claim, None, "", "absent")
    if value is None:
        return Row(claim, None, "", "missing")
    r, tol, x = claim.reported, claim.tolerance, value
    if claim.kind == "qualitative":
        if not isinstance(x, bool):
            return Row(claim, x, "metric is not a boolean", "differs")
        return Row(claim, x, "", "reproduced" if x else "differs")
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return Row(claim, None, f"metric is not a number ({x!r})", "differs")
    x = float(x)
    if claim.kind == "exact":
        ok, diff = x == float(r), f"{x - float(r):.3g}"
    elif claim.kind == "abs":
        ok, diff = abs(x - r) <= tol, f"{x - r:+.3g}"
    elif claim.kind == "rel":
        rel = abs(x - r) / abs(r) if r != 0 else math.inf
        ok, diff = rel <= tol, f"{(x - r) / abs(r):+.2%}" if r != 0 else "n/a"
    elif claim.kind == "max":
        ok, diff = x <= tol, f"bound ≤ {tol:.3g}"
    elif claim.kind == "min":
        ok, diff = x >= tol, f"bound ≥ {tol:.3g}"
    else:
        raise ReportError(f"{claim.source}: {claim.label}: kind {claim.kind!r} needs the metrics (use evaluate)")
    return Row(claim, x, diff, "reproduced" if ok else "differs")


def evaluate(claim: Claim, metrics: dict[str, Any] | None) -> Row:
    """Status of ``claim`` given the ``metrics`` of its notebook (``None``: the notebook has not run)."""
    if claim.kind == "absent":
        return Row(claim, None, "", "absent")
    metrics = metrics or {}
    where = f"{claim.source}: {claim.label}"
    if claim.kind == "predicate":
        names = predicate_names(claim.predicate)
        lacking = [n for n in names if n not in metrics]
        if lacking:
            return Row(claim, None, f"no metric {', '.join(lacking)}", "missing")
        used = tuple((n, metrics[n]) for n in names)
        try:
            ok = evaluate_predicate(claim.predicate, metrics, where)
        except ReportError as exc:
            return Row(claim, None, str(exc).split(": ", 2)[-1], "differs", used)
        return Row(claim, ok, "", "reproduced" if ok else "differs", used)
    if claim.kind == "within_se":
        value, se = metrics.get(claim.metric), metrics.get(claim.se[0])
        if value is None or se is None:
            return Row(claim, value, "no standard error" if value is not None else "", "missing")
        if not (_number(value) and _number(se) and se >= 0):
            return Row(claim, None, f"value {value!r} or standard error {se!r} is not a number", "differs")
        from iclcore.stats import agreement_within_se  # the rule lives with the package's statistics

        a = agreement_within_se(float(value), float(claim.reported), float(se), claim.z, claim.discretisation)
        text = f"{a.difference:+.3g} = {a.z:+.2f} SE (SE {se:.3g}); margin {a.margin:+.3g}"
        used = ((claim.metric, value), (claim.se[0], se))
        return Row(claim, float(value), text, "reproduced" if a.holds else "differs", used)
    return compare(claim, metrics.get(claim.metric))


def load_metrics(generated: Path, notebook: str) -> dict[str, Any] | None:
    path = generated / notebook / "metrics.json"
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReportError(f"{path}: cannot read the metrics ({exc}); run `icl-book run {notebook}`") from None
    if not isinstance(data, dict):
        raise ReportError(f"{path}: not a JSON object; run `icl-book run {notebook}`")
    return data


def report_rows(root: Path, generated: Path) -> list[Row]:
    rows = []
    cache: dict[str, dict[str, Any] | None] = {}
    for claim in load_claims(root / "book" / "reported"):
        if claim.notebook and claim.notebook not in cache:
            cache[claim.notebook] = load_metrics(generated, claim.notebook)
        rows.append(evaluate(claim, cache.get(claim.notebook)))
    return rows


PAPER_PRESET = "paper"


def _built_preset(generated: Path, notebook: str) -> str | None:
    """The preset of the run in ``generated/<notebook>/`` (None if there is none or it is unreadable)."""
    from .store import STAMP

    try:
        return json.loads((generated / notebook / STAMP).read_text()).get("preset")
    except (OSError, ValueError, AttributeError):
        return None


def paper_metrics(
    root: Path, generated: Path, notebooks: list[str], keys: dict[str, str] | None = None
) -> dict[str, dict[str, Any]]:
    """Metrics of the store's paper-preset run of each notebook, under the notebook's *current* key.

    A notebook contributes only if it defines a ``paper`` preset, the book was not itself built
    with that preset (``generated/<nb>/.icl-run.json``), and the store holds a verified entry for
    the key that ``icl-book run <nb> --preset paper`` would use now (same source, parameters,
    lock and ``iclcore`` files). Nothing is executed. ``keys``, if given, receives each found run's key.
    """
    from .notebooks import NotebookError, discover_all
    from .runs import make_requests
    from .store import cache_key, store_dir, verify_folder

    wanted = set(notebooks)
    entries = store_dir(root) / "entries"
    if not wanted or not entries.is_dir():
        return {}
    found: dict[str, dict[str, Any]] = {}
    for nb in discover_all(root)[0]:
        if nb.name not in wanted or PAPER_PRESET not in nb.presets:
            continue
        if _built_preset(generated, nb.name) == PAPER_PRESET:
            continue  # the main column already is the paper preset
        try:
            key = cache_key(make_requests([nb], generated, PAPER_PRESET)[0], root)
        except (NotebookError, OSError):
            continue
        if (entries / key).is_dir() and not verify_folder(entries / key, key):
            metrics = load_metrics(entries, key)
            if metrics is not None:
                found[nb.name] = metrics
                if keys is not None:
                    keys[nb.name] = key
    return found


def paper_rows(rows: list[Row], metrics: dict[str, dict[str, Any]]) -> list[Row | None]:
    """Each row re-evaluated on the paper-preset metrics of its notebook (``None`` where there are none)."""
    return [
        evaluate(r.claim, metrics[r.claim.notebook]) if r.status != "absent" and r.claim.notebook in metrics else None
        for r in rows
    ]


def rule_powers(rows: list[Row], metrics: dict[str, dict[str, Any] | None]) -> dict[int, Any]:
    """The power (:class:`iclbook.power.Power`) of every row that states an alternative, by ``id(row)``, at the
    metrics of its notebook (``metrics``: notebook -> its metrics, ``None`` if not run); where the power cannot
    be computed (a metric missing), a one-line string that says why."""
    from .power import AlternativeError, rule_power

    out: dict[int, Any] = {}
    for r in rows:
        cl = r.claim
        if cl.alternative is None or r.status == "absent":
            continue
        m = metrics.get(cl.notebook)
        if m is None:
            out[id(r)] = "not computed: the notebook has not run"
            continue
        try:
            out[id(r)] = rule_power(cl, cl.alternative, m)
        except AlternativeError as exc:
            out[id(r)] = f"not computed: {exc}"
    return out


def evidence_checks(root: Path, rows: list[Row], metrics: dict[str, dict[str, Any] | None]) -> dict[int, list[str]]:
    """For every row with a diagnosis other than ``open``, what its evidence lacks
    (:func:`iclbook.evidence.evidence_problems`), by ``id(row)``; rows whose evidence holds are left out. Metric
    references are checked against ``metrics`` (notebook -> its metrics; ``None``: not run, not checked)."""
    from .evidence import errata_headings, evidence_problems, git_commit_exists

    def commit_exists(ref: str) -> bool:
        return git_commit_exists(root, ref)

    ids = {r.claim.id for r in rows if r.claim.id}
    headings = errata_headings(root / "book" / "errata")
    found = {}
    for r in rows:
        cl = r.claim
        if cl.diagnosis and cl.diagnosis != "open":
            problems = evidence_problems(cl, root, metrics.get(cl.notebook), ids, headings, commit_exists)
            if problems:
                found[id(r)] = problems
    return found


def _power_cell(cl: Claim, p: Any) -> str:
    """The report's cell beside a verdict: the power against the stated alternative and the alternative."""
    if cl.alternative is None:
        return "—"
    if not hasattr(p, "power"):
        return f"? ({cl.alternative.text}; {p or 'not computed'})"
    from .power import POWER_MIN

    flag = f" ⚠ below {POWER_MIN:g}" if p.power < POWER_MIN else ""
    return f"**{p.power:.2f}**{flag} against: {cl.alternative.text}"


def _paper_power(p: Any) -> str:
    """`` · power 0.93`` after a paper-preset status, where the power at the paper metrics was computed."""
    return f" · power {p.power:.2f}" if hasattr(p, "power") else ""


def _fmt(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "holds" if v else "fails"
    if isinstance(v, (int, float)):
        return f"{v:.6g}" if isinstance(v, float) else str(v)
    return str(v)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


#: Status as shown, by basis: a passing rule means different things for different bases.
PASS_LABEL = {
    "predicted": "✓ reproduced",
    "underpowered": "✓ holds (underpowered)",
    "theorem": "✓ identity verified",
    "construction": "✓ holds (by construction)",
    "calibrated": "✓ matches (calibrated)",
    "erratum": "✓ holds (erratum)",
    "other-model": "✓ matches (other model)",
    UNLABELLED: "✓ holds (basis not labelled)",
}
FAIL_LABEL = {
    "predicted": "✗ differs",
    "underpowered": "✗ differs (underpowered)",
    "theorem": "✗ identity fails",
    "construction": "✗ differs",
    "calibrated": "✗ differs (calibrated)",
    "erratum": "✗ differs (erratum)",
    "other-model": "✗ differs (other model)",
    UNLABELLED: "✗ differs (basis not labelled)",
}
PAPERS = {
    "000": "Generalization, optimization and preconditioning dynamics for encoder–decoder in-context least squares",
    "001": "Optimization and generalization for encoder, decoder and encoder–decoder: MMNN experiments",
    "002": "Bordelon, Letey, Pehlevan: scaling laws of in-context learning (DMFT)",
    "003": "Mainali, Teixeira: exact mode dynamics of in-context logistic regression",
    "004": "Nagy: in-context learning as gradient descent (identities)",
}
BASIS_MEANING = {
    "predicted": "an independent computation that could disagree with the paper's number, whose rule rejects the "
    "stated alternative (a result that would change the paper's conclusion) with power at least 0.8",
    "underpowered": "an independent computation whose rule cannot reject that alternative with power 0.8 "
    "(the note says why and what would make it decisive): shown, not counted as a reproduction",
    "calibrated": "a free setting was chosen from the paper's number (the note names it)",
    "construction": "true because of how the experiment is built",
    "theorem": "holds for every input: a check of our code",
    "erratum": "the paper is wrong; the evidence is given",
    "other-model": "our model differs from the paper's (the note says why)",
    "absent": "not reproduced yet",
    "out-of-scope": "cannot be recomputed offline (needs a pretrained checkpoint or other material that cannot be had here; the note says what)",
}


def status_label(row: Row) -> str:
    if row.status == "absent":
        return "⊘ out of scope" if row.claim.basis == "out-of-scope" else "○ absent"
    if row.status == "missing":
        return "? missing"
    table = PASS_LABEL if row.status == "reproduced" else FAIL_LABEL
    return table[row.claim.basis]


def _rule(c: Claim) -> str:
    if c.kind == "predicate":
        return f"predicate `{c.predicate}`"
    if c.kind == "within_se":
        disc = f" + {c.discretisation:g}" if c.discretisation else ""
        return f"within_se (\\|Δ\\| ≤ {c.z:g}·SE{disc})"
    return c.kind + (f" ({c.tolerance:g})" if c.tolerance is not None else "")


def _used(row: Row) -> str:
    return ", ".join(f"{k} = {_fmt(v)}" for k, v in row.used)


def summary_counts(rows: list[Row]) -> dict[str, int]:
    """Headline counts: reproduced = predicted rows whose rule holds; identities = theorem rows that hold."""
    return {
        "reproduced": sum(r.claim.basis == "predicted" and r.status == "reproduced" for r in rows),
        "predicted": sum(r.claim.basis == "predicted" for r in rows),
        "identities": sum(r.claim.basis == "theorem" and r.status == "reproduced" for r in rows),
        "theorems": sum(r.claim.basis == "theorem" for r in rows),
        "absent": sum(r.status == "absent" and r.claim.basis != "out-of-scope" for r in rows),
        "out_of_scope": sum(r.claim.basis == "out-of-scope" for r in rows),
        "missing": sum(r.status == "missing" for r in rows),
        "total": len(rows),
    }


#: Diagnoses that explain a `predicted` row that differs (erratum, finite-size, setting or reading).
EXPLAINED = ("erratum", "finite-size", "setting", "reading")


def outcome_counts(rows: list[Row], bands: dict[int, Any] | None = None) -> dict[str, int]:
    """The headline: `predicted` rows reproduced / explained (a differing row whose diagnosis is
    erratum, finite-size, setting or reading) / open (any other differing row) / missing, rows absent and out of
    scope; ``robust``: reproduced rows whose sweep band (``bands``, by ``id(row)``) is robust."""
    pred = [r for r in rows if r.claim.basis == "predicted"]
    bands = bands or {}
    return {
        "predicted": len(pred),
        "reproduced": sum(r.status == "reproduced" for r in pred),
        "robust": sum(r.status == "reproduced" and getattr(bands.get(id(r)), "label", "") == "robust" for r in pred),
        "explained": sum(r.status == "differs" and r.claim.diagnosis in EXPLAINED for r in pred),
        "open": sum(r.status == "differs" and r.claim.diagnosis not in EXPLAINED for r in pred),
        "missing": sum(r.status == "missing" for r in pred),
        "absent": sum(r.status == "absent" and r.claim.basis != "out-of-scope" for r in rows),
        "out_of_scope": sum(r.claim.basis == "out-of-scope" for r in rows),
    }


def headline_table(rows: list[Row], paper: list[Row | None], bands: dict[int, Any] | None = None) -> list[str]:
    """Markdown lines: per paper and overall, the outcome counts (:func:`outcome_counts`) at the preset the
    book was built with and, for the rows with a stored paper-preset run, at the paper preset. *robust* counts
    the reproduced rows that hold at every swept setting; *not computed* is absent + out of scope (nine
    columns, so that the table fits the text column at 1280 px)."""
    head = "| paper | preset | predicted | reproduced | robust | explained | open | missing | not computed |"
    lines = [head, "|---" * 9 + "|"]
    keys = ("predicted", "reproduced", "robust", "explained", "open", "missing")
    for seed in (*SEEDS, "all"):
        idx = [i for i, r in enumerate(rows) if seed == "all" or r.claim.seed == seed]
        if not idx:
            continue
        name = "**all**" if seed == "all" else seed
        c = outcome_counts([rows[i] for i in idx], bands)
        uncomputed = f"{c['absent']} + {c['out_of_scope']}"
        lines.append(f"| {name} | quick | " + " | ".join(str(c[k]) for k in keys) + f" | {uncomputed} |")
        with_paper = [paper[i] for i in idx if paper[i] is not None]
        if with_paper:
            pc = outcome_counts(with_paper)
            cells = [str(pc[k]) if k != "robust" else "—" for k in keys] + ["—"]
            lines.append(f"| {name} | paper, {len(with_paper)} rows | " + " | ".join(cells) + " |")
    return lines


#: Pseudo-notebook whose ``metrics.json`` holds the ledger's counts, so that chapters can state coverage
#: with the ``{metric}`` role (``{metric}`ledger:predicted```) instead of typing numbers.
LEDGER = "ledger"


def ledger_counts(
    rows: list[Row], paper: list[Row | None] | None = None, bands: dict[int, Any] | None = None
) -> dict[str, int]:
    """Counts for the ``ledger`` pseudo-notebook: headline counts, rows per basis, per paper and per status.

    ``paper`` (from :func:`paper_rows`) adds ``paper_<count>`` for the rows that have a paper-preset value.
    """
    counts: dict[str, int] = dict(summary_counts(rows))
    for k, v in outcome_counts(rows, bands).items():
        counts[f"outcome_{k}"] = v
    for k, v in summary_counts([r for r in paper or [] if r is not None]).items():
        counts[f"paper_{k}"] = v
    for b in BASES:
        counts[f"basis_{b.replace('-', '_')}"] = sum(r.claim.basis == b for r in rows)
    for st in STATUSES:
        counts[f"status_{st}"] = sum(r.status == st for r in rows)
    for seed in SEEDS:
        sub = [r for r in rows if r.claim.seed == seed]
        for k, v in summary_counts(sub).items():
            counts[f"seed{seed}_{k}"] = v
    return counts


def basis_status_table(rows: list[Row]) -> list[str]:
    """A markdown table: one line per basis present in ``rows``, one column per status."""
    bases = [b for b in BASES + (UNLABELLED,) if any(r.claim.basis == b for r in rows)]
    head = "| basis | " + " | ".join(STATUSES) + " | rows |"
    lines = [head, "|---" * (len(STATUSES) + 2) + "|"]
    for b in bases:
        sub = [r for r in rows if r.claim.basis == b]
        cells = [str(sum(r.status == s for r in sub)) for s in STATUSES]
        lines.append(f"| {b} | " + " | ".join(cells) + f" | {len(sub)} |")
    cells = [str(sum(r.status == s for r in rows)) for s in STATUSES]
    lines.append("| **all** | " + " | ".join(cells) + f" | {len(rows)} |")
    return lines


def _paper_summary(rows: list[Row], paper: list[Row | None]) -> str:
    """One line: how the rows that have a paper-preset value fare at both sizes."""
    pairs = [(r, p) for r, p in zip(rows, paper) if p is not None]
    if not pairs:
        return ""
    q, pc = summary_counts([r for r, _ in pairs]), summary_counts([p for _, p in pairs])
    changed = sum(r.status != p.status for r, p in pairs)
    n_nb = len({r.claim.notebook for r, _ in pairs})
    return (
        f"At the **paper preset** ({n_nb} notebook(s) with a paper-size run, {len(pairs)} rows): "
        f"**{pc['reproduced']} reproduced** of {pc['predicted']} predicted claims (quick: {q['reproduced']}) · "
        f"**{pc['identities']} identities verified** of {pc['theorems']} (quick: {q['identities']}) · "
        f"{pc['missing']} missing · {changed} row(s) change status between the sizes."
    )


def _uncomputed_table(rows: list[Row], why: str) -> list[str]:
    """Markdown lines: the rows no notebook computes (absent or out of scope), by paper and section."""
    lines = [f"| id | paper | section | claim | reported | {why} |", "|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r.claim.seed, r.claim.section)):
        a = r.claim
        cells = (a.id, a.seed, a.section, a.claim, _fmt(a.reported), a.basis_note)
        lines.append("| " + " | ".join(_cell(x) for x in cells) + " |")
    return [*lines, ""]


def _rows_by_notebook(rows: list[Row], order: list[str] | None) -> tuple[list[str], dict[str, list[Row]]]:
    """The computed rows grouped by notebook, and the notebooks in book ``order`` (others last, by name)."""
    by_notebook: dict[str, list[Row]] = {}
    for r in rows:
        if r.status != "absent":
            by_notebook.setdefault(r.claim.notebook, []).append(r)
    rank = {name: i for i, name in enumerate(order or [])}
    return sorted(by_notebook, key=lambda n: (rank.get(n, len(rank)), n)), by_notebook


def _notebook_details(
    notebooks: list[str],
    by_notebook: dict[str, list[Row]],
    paper_of: dict[int, Row | None],
    bands: dict[int, Any],
    powers: dict[int, Any],
    unsupported: dict[int, list[str]],
    origins: dict[str, str] | None,
    built: dict[str, str] | None = None,
    heading: str = "###",
) -> list[str]:
    """One table per notebook (in the order given) of its rows, with the notes by row, under ``heading``s."""
    lines: list[str] = []

    def _difference(r: Row) -> str:
        if r.claim.kind == "predicate" and r.used:
            return _used(r) + (f"; {r.difference}" if r.difference else "")
        return r.difference

    for nb in notebooks:
        with_paper = any(paper_of[id(r)] is not None for r in by_notebook[nb])
        head = (
            "| id | status | power against the alternative | basis | claim (paper, section) | reported | computed "
            "| difference / values used |"
        )
        if with_paper:
            head += " paper preset: status | paper preset: computed | paper preset: difference / values used |"
        lines += [f"{heading} Notebook `{nb}`", ""]
        if nb in (built or {}):
            lines += [f"The first status and values come from a run {(built or {})[nb]}.", ""]
        if with_paper:
            lines += [
                "The first status and values are those of the preset the book was built with; the `paper`",
                "columns evaluate the same rule on the stored run of the notebook's `paper` preset"
                + (f", {(origins or {})[nb]}." if nb in (origins or {}) else "."),
                "",
            ]
        lines += [head + " rule |", "|---" * head.count("|") + "|"]
        notes = []
        for i, r in enumerate(by_notebook[nb], start=1):
            cl = r.claim
            cells = [
                cl.id or str(i),
                status_label(r)
                + (f" · {cl.diagnosis}" if cl.diagnosis and r.status == "differs" else "")
                + (f" · {bands[id(r)].label}" if id(r) in bands else ""),
                _power_cell(cl, powers.get(id(r))),
                cl.basis,
                f"{cl.claim} ({cl.seed} {cl.section})",
                _fmt(cl.reported),
                _fmt(r.reproduced),
                _difference(r),
            ]
            if with_paper:
                p = paper_of[id(r)]
                cells += (
                    [status_label(p) + _paper_power(powers.get(id(p))), _fmt(p.reproduced), _difference(p)]
                    if p is not None
                    else ["—", "—", ""]
                )
            lines.append("| " + " | ".join(_cell(x) for x in (*cells, _rule(cl))) + " |")
            text = " ".join(
                t
                for t in (
                    f"*{cl.basis}:* {cl.basis_note}" if cl.basis_note else "",
                    cl.note,
                    f"*No standard error:* {cl.no_se}" if cl.no_se else "",
                    f"*Diagnosis ({cl.diagnosis}):* {cl.diagnosis_note}" if cl.diagnosis else "",
                    "*Evidence:* " + "; ".join(e.describe() for e in cl.evidence) + "." if cl.evidence else "",
                    f"**Evidence lacking:** {'; '.join(unsupported[id(r)])}." if id(r) in unsupported else "",
                    f"*Robustness:* {band_text(bands[id(r)])}." if id(r) in bands else "",
                    f"*Power:* {powers[id(r)].describe()} against {cl.alternative.text}."
                    if hasattr(powers.get(id(r)), "power")
                    else "",
                )
                if t
            )
            if text:
                notes.append(f"- **{cl.id or i}.** {text}")
        lines.append("")
        if notes:
            lines += ["Notes, by row:", "", *[n.replace("\n", " ") for n in notes], ""]
    return lines


def report_page(seed: str) -> str:
    """The document name of the report page of paper ``seed`` (beside ``report.md``)."""
    return f"report-{seed}"


def render_paper_report(
    seed: str,
    rows: list[Row],
    order: list[str] | None = None,
    paper: list[Row | None] | None = None,
    bands: dict[int, Any] | None = None,
    origins: dict[str, str] | None = None,
    powers: dict[int, Any] | None = None,
    unsupported: dict[int, list[str]] | None = None,
    built: dict[str, str] | None = None,
) -> str:
    """The report page of one paper: its counts, basis × status, and one table per notebook of its rows."""
    paper = list(paper) if paper is not None else [None] * len(rows)
    paper_of = {id(r): p for r, p in zip(rows, paper)}
    sub = [r for r in rows if r.claim.seed == seed]
    sc = summary_counts(sub)
    lines = [
        f"# Paper {seed}: {PAPERS.get(seed, '')}",
        "",
        "The rows of the ledger that grade this paper's claims; the rules, bases and columns are explained on the",
        "{doc}`summary page <report>`.",
        "",
        f"**{sc['reproduced']} reproduced** of {sc['predicted']} predicted claims · **{sc['identities']} identities "
        f"verified** of {sc['theorems']} · {sc['absent']} absent · {sc['out_of_scope']} out of scope · "
        f"{sc['missing']} missing · {sc['total']} rows.",
        "",
        *basis_status_table(sub),
        "",
    ]
    line = _paper_summary(sub, [paper_of[id(r)] for r in sub])
    if line:
        lines += [line, ""]
    notebooks, by_notebook = _rows_by_notebook(sub, order)
    lines += _notebook_details(
        notebooks, by_notebook, paper_of, bands or {}, powers or {}, unsupported or {}, origins, built, heading="##"
    )
    return "\n".join(lines)


def render_report(
    rows: list[Row],
    order: list[str] | None = None,
    paper: list[Row | None] | None = None,
    bands: dict[int, Any] | None = None,
    sweeps: list[str] | None = None,
    origins: dict[str, str] | None = None,
    powers: dict[int, Any] | None = None,
    unsupported: dict[int, list[str]] | None = None,
    details: bool = True,
    built: dict[str, str] | None = None,
    paper_sources: str = "",
) -> str:
    """The report page: headline, basis × status per paper, absent claims, then one table per notebook.

    With ``details=False`` the tables by notebook are left out (the book puts them on one page per paper,
    :func:`render_paper_report`) and the page links to those pages instead.

    ``order`` lists notebook names in book order; notebooks not in it come last, by name.
    ``paper`` (aligned with ``rows``, from :func:`paper_rows`): the same rules evaluated on the
    notebooks' paper-preset runs; where present, a second value and status appear beside the
    quick ones and the summaries count both. ``origins``: notebook -> where its paper run came from, when
    it was imported from an archive (:func:`iclbook.archive.origin_note`), said above its table. ``powers``
    (:func:`rule_powers`, by ``id(row)``, of the rows and of the paper-preset rows): the power of each rule
    against its stated alternative, shown in a column beside the verdict and after the paper-preset status.
    ``unsupported`` (:func:`evidence_checks`): what the evidence of a diagnosis lacks, said in the row's notes
    and counted under the headline.
    ``built``: notebook -> where the run the book was built with came from, when it was imported.
    """
    paper = list(paper) if paper is not None else [None] * len(rows)
    if len(paper) != len(rows):
        raise ValueError("paper: must be aligned with rows")
    paper_of = {id(r): p for r, p in zip(rows, paper)}
    bands = bands or {}
    powers = powers or {}
    unsupported = unsupported or {}
    c = summary_counts(rows)
    lines = [
        "# Reproduction report",
        "",
        "Every row compares what a paper **reports** with what this book **computes** when it is built. The",
        "computed values are read from the notebooks' `metrics.json`; the status is computed from them and the",
        "row's rule, never typed. Rules: *rel* — relative difference within the tolerance; *abs* — absolute",
        "difference within it; *exact* — equal; *max*/*min* — the computed value is below/above the tolerance;",
        "*within_se* — \\|computed − reported\\| ≤ z·SE (+ a stated discretisation term), with SE the standard",
        "error the notebook computed; *predicate* — an expression over metrics, shown with the values it read.",
        "Tolerances come from an error model stated in the row's note.",
        "",
        "A rule that cannot fail proves nothing, so every *predicted* row states the **alternative** it must reject",
        "(a result that would change the paper's conclusion: an exponent off by 0.1, a ratio off by 3 %, …) and the",
        "report computes the rule's **power** against it from the row's own error model (the statistic normal with",
        "the standard error the notebook computed: analytic for interval rules, a seeded simulation of 100,000 draws",
        "for predicates; `iclbook/power.py`). A rule with power below 0.8 is not a reproduction: its row is",
        "*underpowered*.",
        "",
        "Each row also has a **basis**, which says what a passing rule is worth:",
        "",
        *[f"- *{b}*: {m}." for b, m in BASIS_MEANING.items()],
        "",
        "Only *predicted* rows count as reproductions. The numbers are those of the preset the book was built",
        "with (normally `quick`). Where a row differs, its note says why (see {doc}`errata`).",
        "",
        f"**{c['reproduced']} reproduced** of {c['predicted']} predicted claims · "
        f"**{c['identities']} identities verified** of {c['theorems']} · {c['absent']} absent · "
        f"{c['out_of_scope']} out of scope · {c['missing']} missing · {c['total']} rows in all.",
        "",
        f"Random quantities: {sum(r.claim.stochastic for r in rows)} rows are graded with the standard error "
        f"the notebook computed; {sum(bool(r.claim.no_se) for r in rows)} rows graded on a random quantity have "
        "none (functions of single training runs), and each says so in its note.",
        "",
    ]
    if _paper_summary(rows, paper):
        lines += [_paper_summary(rows, paper) + (f" {paper_sources}" if paper_sources else ""), ""]
    lines += [
        "Outcome of the *predicted* rows, per paper: reproduced (of which **robust**: the rule holds at every",
        "swept setting the paper leaves unstated, see *Robustness across unstated settings* below), explained",
        "(differs, with an erratum, finite-size, setting or reading diagnosis), open (differs otherwise), missing; and",
        "the rows not computed (absent + out of scope).",
        "",
        *headline_table(rows, paper, bands),
        "",
        "Each diagnosis other than *open* cites the runs behind it (its *Evidence*: the notebook's own size series or",
        "before/after metrics, a test, an errata entry and the row of the adopted reading, or a commit); the build checks",
        "that they exist"
        + (
            f". **{len(unsupported)} diagnosis(es) lack their evidence** (said in the row's notes)."
            if unsupported
            else ", and every diagnosis has its evidence."
        ),
        "",
    ]
    seeds = sorted({r.claim.seed for r in rows})
    for seed in seeds:
        sub = [r for r in rows if r.claim.seed == seed]
        sc = summary_counts(sub)
        lines += [
            f"## Paper {seed}: {PAPERS.get(seed, '')}",
            "",
            f"{sc['reproduced']} of {sc['predicted']} predicted claims reproduced; {sc['identities']} of "
            f"{sc['theorems']} identities verified; absent: {sc['absent']}.",
            "",
            *basis_status_table(sub),
            "",
        ]
        line = _paper_summary(sub, [paper_of[id(r)] for r in sub])
        if line:
            lines += [line, ""]
    absent = [r for r in rows if r.status == "absent" and r.claim.basis == "absent"]
    if absent:
        lines += [
            "## Not reproduced yet",
            "",
            "Figures, tables and numbered claims of the papers that no notebook computes yet, with the chapter",
            "that will cover them or the reason they are out of scope.",
            "",
            *_uncomputed_table(absent, "where / why"),
        ]
    out_of_scope = [r for r in rows if r.claim.basis == "out-of-scope"]
    if out_of_scope:
        lines += [
            "## Out of scope",
            "",
            "Claims that cannot be recomputed offline (pretrained public checkpoints, a proof assistant's",
            "export): counted apart from the absent ones, each with the reason.",
            "",
            *_uncomputed_table(out_of_scope, "why"),
        ]
    notebooks, by_notebook = _rows_by_notebook(rows, order)
    lines += [
        "## By notebook",
        "",
        "| notebook | rows | predicted: reproduced / rows | theorem: verified / rows | differ | missing |",
        "|---|---|---|---|---|---|",
    ]
    for nb in notebooks:
        nb_rows = by_notebook[nb]
        nc = summary_counts(nb_rows)
        differ = sum(r.status == "differs" for r in nb_rows)
        lines.append(
            f"| `{nb}` | {len(nb_rows)} | {nc['reproduced']} / {nc['predicted']} | "
            f"{nc['identities']} / {nc['theorems']} | {differ} | {nc['missing']} |"
        )
    lines.append("")

    if details:
        lines += _notebook_details(notebooks, by_notebook, paper_of, bands, powers, unsupported, origins, built)
    else:
        lines += [
            "The rows of each paper, notebook by notebook (reported, computed, rule, verdict, power and notes), are on",
            "one page per paper: " + ", ".join(f"{{doc}}`paper {seed} <{report_page(seed)}>`" for seed in PAPERS) + ".",
            "",
        ]
    if bands:
        lines += robustness_section(rows, bands, sweeps or [])
    return "\n".join(lines)


def sweep_bands(root: Path, rows: list[Row], generated: Path) -> tuple[dict[int, Any], list[str]]:
    """The robustness band (:func:`iclbook.sweep.band`) of every row of a swept basis (:data:`SWEPT_BASES`), by ``id(row)``,
    from the sweep points the store holds (nothing is executed), and the report lines that describe the
    declared settings with one specification-curve figure per swept notebook (written as
    ``generated/sweep-<notebook>.png`` and ``.pdf``). A malformed ``notebooks/sweeps.yml`` is a :class:`ReportError`."""
    from .notebooks import NotebookError, discover_all
    from .sensitivity import INSENSITIVE, metric_sensitivity, with_sensitivity
    from .store import import_scans
    from .sweep import SWEEPS, band, load_plans, spec_curve, stored_points

    try:
        plans = load_plans(root, discover_all(root)[0])
    except NotebookError as exc:
        raise ReportError(str(exc)) from None
    scans = import_scans(root)
    from .record import recorded_sweep_metrics

    recorded = recorded_sweep_metrics(root)  # the committed record's points stand in for runs the store lacks
    stored = {name: stored_points(root, plan, scans, recorded) for name, plan in plans.items()}
    bands = {}
    for r in rows:
        cl = r.claim
        if cl.basis not in SWEPT_BASES or r.status == "absent":
            continue
        points = stored.get(cl.notebook, [])
        swept = {st.name for st in plans[cl.notebook].settings} if cl.notebook in plans else set()
        unknown = sorted(set(cl.depends_on or ()) - swept)
        if unknown:
            raise ReportError(
                f"{cl.source}: {cl.label}: depends_on names {unknown}, not swept settings of {cl.notebook} "
                f"({', '.join(sorted(swept)) or 'none'}; {SWEEPS.as_posix()})"
            )
        b = band(cl, points, evaluate)
        bands[id(r)] = with_sensitivity(b, metric_sensitivity(rule_names(cl), points, cl.depends_on)) if points else b
    lines = [
        f"The settings each notebook sweeps, declared in `{SWEEPS.as_posix()}` with the reason for each range:",
        "",
        "| notebook | setting | values (quick preset in bold) | paper | why |",
        "|---|---|---|---|---|",
    ]
    for name, plan in plans.items():
        base = plan.notebook.resolve()
        for st in plan.settings:
            vals = ", ".join(f"**{v!r}**" if v == base[st.name] else repr(v) for v in st.values)
            lines.append(f"| `{name}` | `{st.name}` | {vals} | {st.paper} | {_cell(st.why)} |")
    lines.append("")
    for name, plan in plans.items():
        points = [(p, m) for p, m in stored[name] if isinstance(m, dict)]
        target = _figure_row(rows, name, plan.figure)
        if target is None or len(points) < 2:
            continue
        metric = target.claim.metric or predicate_names(target.claim.predicate)[0]
        data = [
            (p, float(m[metric]), evaluate(target.claim, m).status == "reproduced", _rule_half_width(target.claim, m))
            for p, m in points
            if _number(m.get(metric))
        ]
        if len(data) < 2:
            continue
        lo, hi = _rule_band(target.claim, dict(points[0][1]) if not points[0][0].changed else {})
        reported = float(target.claim.reported) if _number(target.claim.reported) else None
        spec_curve(
            f"{name}: {metric} ({target.claim.id}) over {len(data)} settings",
            data,
            reported,
            lo,
            hi,
            generated / f"sweep-{name}",  # beside report.md: not a notebook's figure (those live in <notebook>/)
        )
        unrun = len(stored[name]) - len(points)
        flat = bands.get(id(target)) is not None and bands[id(target)].label == INSENSITIVE
        lines += [
            f"```{{figure}} sweep-{name}.png",
            f":name: fig-sweep-{name.replace('_', '-')}",
            "",
            f"Specification curve of `{metric}` (row {target.claim.id}) in `{name}`: the value at each stored sweep "
            f"point, sorted (red: the row's rule fails there; bars: the rule's z·SE at that point where it has one), "
            f"the reported value (dashed) and the rule's band (grey; at the preset's SE); below, the setting that produced "
            f"each point (*preset*: the quick preset)."
            + (f" {unrun} point(s) not run yet." if unrun else "")
            + (
                " **The metric is the same at every point: the swept settings do not enter it, so this curve shows no"
                " robustness (the row is labelled *insensitive*).**"
                if flat
                else ""
            )
            + " Drawn when the book is built from the store's runs of the sweep points (nothing is executed); "
            "regenerate with `make sweep`, then `make book`.",
            "```",
            "",
        ]
    return bands, lines


def rule_names(c: Claim) -> list[str]:
    """The metric keys a row's rule reads (its metric, or the names of its predicate)."""
    return predicate_names(c.predicate) if c.kind == "predicate" else [c.metric] if c.metric else []


def band_text(b: Any) -> str:
    """A band's description with its reason (:func:`iclbook.sensitivity.band_text`)."""
    from .sensitivity import band_text as text

    return text(b)


def _figure_row(rows: list[Row], notebook: str, row_id: str) -> Row | None:
    """The row a notebook's sweep figure shows: ``row_id`` if given, else its first `predicted` numeric row."""
    mine = [r for r in rows if r.claim.notebook == notebook and r.claim.basis in SWEPT_BASES]
    if row_id:
        return next((r for r in mine if r.claim.id == row_id), None)
    numeric = [r for r in mine if r.claim.kind in ("within_se", "rel", "abs", "max", "min")]
    return next(iter(numeric or [r for r in mine if r.claim.kind == "predicate"]), None)


def _rule_half_width(c: Claim, metrics: dict[str, Any]) -> float | None:
    """A within_se rule's half-width z·SE + discretisation at one sweep point (None for other rules)."""
    se = metrics.get(c.se[0]) if c.kind == "within_se" and c.se else None
    return c.z * float(se) + c.discretisation if _number(se) else None


def _rule_band(c: Claim, metrics: dict[str, Any]) -> tuple[float | None, float | None]:
    """The interval of metric values the rule accepts (``None``: unbounded or not a single-metric rule)."""
    r = float(c.reported) if _number(c.reported) else None
    if c.kind == "rel" and r is not None:
        return r - abs(r) * c.tolerance, r + abs(r) * c.tolerance
    if c.kind == "abs" and r is not None:
        return r - c.tolerance, r + c.tolerance
    if c.kind == "max":
        return None, c.tolerance
    if c.kind == "min":
        return c.tolerance, None
    if c.kind == "within_se" and r is not None and _number(metrics.get(c.se[0])):
        half = c.z * float(metrics[c.se[0]]) + c.discretisation
        return r - half, r + half
    return None, None


def robustness_section(rows: list[Row], bands: dict[int, Any], extra: list[str]) -> list[str]:
    """The report's closing section: what the sweeps are, the band counts, every fragile row with its
    explanation (its diagnosis or note), the declared settings and the figures (``extra``)."""
    banded = [r for r in rows if id(r) in bands]
    labels = ("robust", "fragile", "fails", "partial", "not swept", "insensitive")
    count = {lab: sum(bands[id(r)].label == lab for r in banded) for lab in labels}
    fragile = [r for r in banded if bands[id(r)].label == "fragile"]
    lines = [
        "## Robustness across unstated settings",
        "",
        "The papers leave most settings unstated (prompt length, noise, conditioning, batch, step size). Each",
        "notebook declares a small range for each of those it uses, and `make sweep` runs the notebook at every",
        "point of a one-at-a-time grid around the quick preset, each point a cached run in the store: a",
        "multiverse analysis {cite:p}`steegen2016multiverse`. The rule of every *predicted*, *underpowered* and",
        "*calibrated* row is evaluated at each stored point: *robust* (holds at every setting), *fragile* (holds at the",
        "preset, fails at some setting), *fails* (fails at the preset), *partial* (holds where run; some points",
        "not run yet), *not swept* (no point in the store), *insensitive* (the metrics the rule reads are the same",
        "number at every stored point, or the row declares in `depends_on` that none of the swept settings enters",
        "them: holding there says nothing about robustness, so such a row is not counted as robust). A calibrated",
        "row is expected to be fragile in the setting it was calibrated on. The figures are specification curves",
        "{cite:p}`simonsohn2020specification`.",
        "",
        f"Of {len(banded)} predicted, underpowered and calibrated rows: "
        + " · ".join(f"{count[k]} {k}" for k in labels)
        + ".",
        "",
    ]
    if fragile:
        lines += ["Fragile rows, with the setting where the rule fails and the ledger's explanation:", ""]
        for r in fragile:
            cl = r.claim
            why = (
                f"*{cl.diagnosis}:* {cl.diagnosis_note}"
                if cl.diagnosis
                else "The ledger gives no diagnosis of this dependence yet."
            )
            lines.append(f"- **{cl.id}** ({cl.basis}, `{cl.notebook}`): {band_text(bands[id(r)])}. {why}")
        lines.append("")
    return [*lines, *extra]


ERRATA_HEADER = """# Errata and decisions

The papers contain typos, gaps and unstated choices. Wherever one is wrong or silent we decide, write the
decision down here, and test it: each entry names the check (a test in `tests/` or a metric in the
{doc}`report`) that supports it. Entries are grouped by chapter.
"""


def render_errata(errata_dir: Path, order: list[str]) -> str:
    """Concatenate ``book/errata/*.md`` in book order (``order``: chapter stems), the rest by name."""
    frags = sorted(errata_dir.glob("*.md"))
    rank = {stem: i for i, stem in enumerate(order)}
    frags.sort(key=lambda p: (rank.get(p.stem, len(rank)), p.stem))
    parts = [ERRATA_HEADER]
    for p in frags:
        parts.append(p.read_text().strip() + "\n")
    return "\n".join(parts)


def iclcore_modules(package_dir: Path | None = None) -> list[tuple[str, list[str]]]:
    """Sections of the API page: ``(subpackage, its public modules)`` from each subpackage's ``__all__``,
    in the order of the layer table, then ``(utility, [])`` for each public top-level module.

    Read statically (nothing of ``iclcore`` is imported here; Sphinx imports the modules it documents).
    """
    if package_dir is None:
        spec = importlib.util.find_spec("iclcore")
        package_dir = Path(next(iter(spec.submodule_search_locations)))
    units = [u for _, layer in LAYERS for u in layer]
    sections = []
    for init in package_dir.glob("*/__init__.py"):
        package = f"iclcore.{init.parent.name}"
        sections.append((package, [f"{package}.{m}" for m in declared_all(init) or []]))
    sections += [(f"iclcore.{p.stem}", []) for p in package_dir.glob("*.py") if not p.stem.startswith("_")]
    return sorted(sections, key=lambda s: (units.index(s[0]) if s[0] in units else len(units), s[0]))


def _automodule(module: str, members: bool) -> list[str]:
    """An automodule block; a package's ``__all__`` names modules, not members, so it gets ``:no-members:``."""
    option = "   :members:" if members else "   :no-members:"
    return ["```{eval-rst}", f".. automodule:: {module}", option, "```", ""]


def render_api(sections: list[tuple[str, list[str]]]) -> str:
    """The API page: each subpackage's docstring, then each of its modules with the members of its ``__all__``."""
    lines = [
        "# API reference",
        "",
        "Generated from the docstrings of the `iclcore` package, family by family (top to bottom of the",
        "layers of `ARCHITECTURE.md`). Each module documents the names of its `__all__`; each function",
        "states the shapes it takes and the equation and seed section it implements.",
        "",
        *_automodule("iclcore", members=False),
    ]
    for package, modules in sections:
        lines += [f"## `{package}`", "", *_automodule(package, members=not modules)]
        for module in modules:
            lines += [f"### `{module}`", "", *_automodule(module, members=True)]
    return "\n".join(lines)


def _write_if_changed(path: Path, text: str) -> None:
    """Write ``text`` unless ``path`` already holds it (so Sphinx does not re-read an unchanged page)."""
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def write_pages(root: Path, generated: Path) -> list[Row]:
    """Write report.md (the summary), report-<paper>.md (one page per paper), errata.md, api.md and
    measurements.md into ``generated``; return the report rows."""
    generated.mkdir(parents=True, exist_ok=True)
    rows = report_rows(root, generated)
    keys: dict[str, str] = {}  # notebook -> key of its stored paper run; an imported one says where from
    names = sorted({r.claim.notebook for r in rows if r.claim.notebook})
    found = paper_metrics(root, generated, names, keys)
    from .archive import built_origins, entry_origin, origin_note
    from .record import record_sources, recorded_runs

    built_with_paper = {n for n in names if _built_preset(generated, n) == PAPER_PRESET}
    recorded, record_notes = recorded_runs(root, PAPER_PRESET, skip=set(found) | built_with_paper)
    paper_sources = record_sources(root, found, recorded)
    stored_paper = {**found, **recorded}
    paper = paper_rows(rows, stored_paper)
    origins = {nb: origin_note(o) for nb, key in keys.items() if (o := entry_origin(root, key)) is not None}
    origins.update(record_notes)
    built = built_origins(generated, names)
    bands, sweep_lines = sweep_bands(root, rows, generated)
    own = {nb: load_metrics(generated, nb) for nb in sorted({r.claim.notebook for r in rows if r.claim.notebook})}
    powers = {**rule_powers(rows, own), **rule_powers([p for p in paper if p is not None], dict(stored_paper))}
    unsupported = evidence_checks(root, rows, own)
    order = toc_order(root / "_toc.yml")
    _write_if_changed(
        generated / "report.md",
        render_report(
            rows,
            order,
            paper,
            bands,
            sweep_lines,
            origins,
            powers,
            unsupported,
            details=False,
            built=built,
            paper_sources=paper_sources,
        ),
    )
    for seed in PAPERS:
        _write_if_changed(
            generated / f"{report_page(seed)}.md",
            render_paper_report(seed, rows, order, paper, bands, origins, powers, unsupported, built),
        )
    (generated / LEDGER).mkdir(exist_ok=True)
    _write_if_changed(
        generated / LEDGER / "metrics.json",
        json.dumps(ledger_counts(rows, paper, bands), indent=2, sort_keys=True) + "\n",
    )
    toc = (root / "_toc.yml").read_text() if (root / "_toc.yml").exists() else ""
    chapter_order = re.findall(r"file:\s*book/([A-Za-z0-9_\-]+)\s*$", toc, flags=re.M)
    _write_if_changed(generated / "errata.md", render_errata(root / "book" / "errata", chapter_order))
    _write_if_changed(generated / "api.md", render_api(iclcore_modules()))
    _write_if_changed(generated / "measurements.md", render_measurements(root))
    return rows
