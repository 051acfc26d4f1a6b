"""The built-in protocols, one declaration each, and looking a config's protocol up. Adding a protocol is adding
one `declare(Protocol(...))`."""

from __future__ import annotations

from ..corpora import registry
from ..display import coefficient, percent
from ..names import Registry
from . import bootstrap, metrics
from .detection import gather, summary_metrics, unit_metrics
from .kendall import Comparisons
from .protocol import PROTOCOLS, Criterion, Headline, PredictionsError, Protocol, declare
from .rating_grid import human_scores, score_grid
from .ratings import coherence
from .ratings import evaluate as meta_evaluate
from .reader import spans_field, types_field
from .snac_types import typed_sentence_metrics

MAX_F1 = Criterion(lambda gold, pred: metrics.prf(gold, pred)["f1"], "maximum F1 of the error class")
MAX_BALANCED_ACCURACY = Criterion(metrics.balanced_accuracy, "maximum balanced accuracy")


def auc_of(unit: str):
    """Headline statistic: ROC-AUC of `unit`s, resampling documents (threshold-free)."""

    def statistic(rows, predictions, threshold):
        units = gather(unit, rows, predictions, None)
        if units.scores is None:
            raise PredictionsError("AUC needs a score for every unit; these predictions give labels only")
        return (units.documents,), bootstrap.auc_statistic(units.gold, units.scores, units.document)

    return statistic


def _balanced_accuracy(rows, predictions, threshold):
    """Headline statistic of StorySumm: balanced accuracy of the summaries, resampling stories (documents)."""
    units = gather("summary", [r for r in rows if r["label"] != -1], predictions, threshold)
    if units.pred is None:
        raise PredictionsError("balanced accuracy needs labels, or scores with a threshold not tuned on the reported split")
    return (units.documents,), bootstrap.balanced_accuracy_statistic(units.gold, units.pred, units.document, units.documents)


def _tau_intra(rows, predictions, threshold):
    """Headline statistic of the meta-evaluation: τ_intra, resampling documents and systems together."""
    human = human_scores(rows)
    scored = _scores_of(rows, predictions)
    pred = coherence(score_grid(scored, human).grid)
    return human.expert_sum.shape, Comparisons(human.expert_sum, pred).tau_intra


def _rating_metrics(rows, predictions, threshold) -> dict:
    """The meta-evaluation of one split's rated summaries: point values and the bias matrix (the headline's CI is
    the evaluation's bootstrap; `cohbench metaeval` gives every τ a CI)."""
    return meta_evaluate(_scores_of(rows, predictions), records=rows, bootstrap=0)


def _scores_of(rows, predictions) -> list[dict]:
    """The score rows of `rows`' rated summaries, in the error polarity (the reader turned a `coherence` around);
    every one needs a score: a correlation has no use for labels."""
    if any(predictions[r["id"]].score is None for r in rows):
        raise PredictionsError("the metaeval protocol correlates scores with ratings: every prediction needs a score")
    return [{"id": r["id"], "score": float(predictions[r["id"]].score[0])} for r in rows]


def _summary_lines(split: str, m: dict) -> list[str]:
    return [
        f"  {split:<5} {m['summaries']} summaries: Cohen κ {coefficient(m.get('cohen_kappa'))}  faithful predicted "
        f"{percent(m.get('predicted_faithful'))}  "
        f"P/R faithful {percent(m.get('precision_faithful'))}/{percent(m.get('recall_faithful'))}  "
        f"easy {percent(m.get('easy_detected'))} / hard {percent(m.get('hard_detected'))} detected  "
        f"BAcc {percent(m.get('balanced_accuracy'))}  AUC {percent(m.get('auc'))}"
    ]


def _unit_block(split: str, name: str, b: dict) -> str:
    return (
        f"  {split:<5} {name + ' ' if name else ''}{b['units']} units ({b['errors']} errors): Acc {percent(b.get('accuracy'))}  "
        f"P {percent(b.get('precision'))}  R {percent(b.get('recall'))}  F1 {percent(b.get('f1'))}  AUC {percent(b.get('auc'))}  "
        f"AP {percent(b.get('average_precision'))}  R@P70 {percent(b.get('recall_at_p70'))}"
        + (f"  (flags {percent(b['predicted_error_rate'])}% of units: the threshold decides nothing)" if b.get("degenerate") else "")
    )


def unit_lines(split: str, m: dict) -> list[str]:
    return [_unit_block(split, "", m)]


def _typed_sentence_lines(split: str, m: dict) -> list[str]:
    lines = [_unit_block(split, "sentence", m["sentence"]), _unit_block(split, "≥2 votes", m["sentence_min2votes"])]
    for t, b in (m.get("per_type") or {}).items():
        lines.append(f"    {t:<7} P {percent(b['precision'])}  R {percent(b['recall'])}  F1 {percent(b['f1'])}  ov. {percent(b['ov'])}  (gold {b['gold']}, predicted {b['predicted']})")
    return lines


def _rating_lines(split: str, m: dict) -> list[str]:
    shown = {k: (percent if k.startswith("acc") else coefficient)(v["value"]) for k, v in m["metrics"].items()}  # Acc_pair is a proportion
    return [f"  {split:<5} {m['scored']} summaries: " + "  ".join(f"{k} {v}" for k, v in shown.items())]


declare(Protocol(
    name="summary", unit="summary",
    description="StorySumm (Subbiah et al. §4, Tables 7-8): faithfulness of a whole summary",
    metrics=summary_metrics, lines=_summary_lines, criterion=MAX_BALANCED_ACCURACY, combined_row=True,
    inputs=("source_text",),  # the story the summary is judged faithful to
    better_score=("faithfulness", "higher = more faithful"),  # StorySumm's own polarity (label 1 = faithful)
    headline=Headline("balanced_accuracy", ("balanced_accuracy",), thresholded=True), headline_statistic=_balanced_accuracy,
))
declare(Protocol(
    name="typed_sentences", unit="sentences", context="preceding",
    description="SNaC (Goyal et al. §5, Tables 10-11): each sentence judged with the preceding summary only",
    metrics=typed_sentence_metrics, lines=_typed_sentence_lines, criterion=MAX_F1,
    headline=Headline("auc", ("sentence", "auc")), headline_statistic=auc_of("sentences"),
    extra_fields={"types": types_field, "spans": spans_field},
))
declare(Protocol(
    name="sentences", unit="sentences",
    description="discordant sentence detection and sentence-level coherence (Cai et al. Table 3)",
    metrics=unit_metrics("sentences"), lines=unit_lines, criterion=MAX_F1,
    headline=Headline("auc", ("auc",)), headline_statistic=auc_of("sentences"),
))
declare(Protocol(
    name="gaps", unit="gaps",
    description="missing sentence detection, one score per gap between adjacent sentences (Cai et al. Table 3)",
    metrics=unit_metrics("gaps"), lines=unit_lines, criterion=MAX_F1,
    headline=Headline("auc", ("auc",)), headline_statistic=auc_of("gaps"),
))
declare(Protocol(
    # τ_intra: robust to system-level confounders (architecture, capitals, the system-mean upper bound all score
    # about 0 there), the regime Steen & Markert recommend reporting (§4.1, §8)
    name="metaeval", unit="ratings", scores="higher = less coherent (negated before correlating with coherence)",
    better_score=("coherence", "higher = more coherent"),  # how Steen & Markert and every SummEval study give a measure
    description="SummEval meta-evaluation (Steen & Markert 2022 §4): Kendall τ-b with mean expert coherence",
    # the summary's place in the document x system grid, and its article: what §4.2's confounders and
    # source-based measures (BARTScore) read
    inputs=("doc_id", "system", "system_name", "text_variant", "source_text"),
    metrics=_rating_metrics, lines=_rating_lines,
    headline=Headline("tau_intra", ("metrics", "tau_intra", "value")), headline_statistic=_tau_intra,
))


def protocols() -> Registry[Protocol]:
    """Every declared protocol: the built-ins above and any declared since."""
    return PROTOCOLS


def protocol_of(config: str) -> Protocol:
    """The declaration of the protocol `config` names in the registry."""
    return protocols()[registry.spec(config).protocol]


def unit_of(config: str) -> str:
    """What a model predicts on `config`: its protocol's unit."""
    return protocol_of(config).unit


def judged_on_preceding(name: str) -> bool:
    """Whether protocol `name` judges each unit on the text before it only (SNaC: the preceding summary)."""
    return protocols()[name].context == "preceding"
