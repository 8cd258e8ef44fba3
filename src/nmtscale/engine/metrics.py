"""Translation quality metrics: BLEU and chrF through sacrebleu (with its signature), and off-target rate."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sacrebleu.metrics import BLEU, CHRF

from nmtscale.engine import langid


@dataclass(frozen=True)
class MetricScore:
    """A corpus-level score with the sacrebleu signature that makes it reproducible."""

    name: str
    score: float
    signature: str

    def __str__(self) -> str:
        return f"{self.name} = {self.score:.2f} ({self.signature})"


def bleu(hypotheses: Sequence[str], references: Sequence[str], target_lang: str) -> MetricScore:
    """Corpus BLEU with sacrebleu's default 13a tokenizer, or its Chinese tokenizer for a Chinese target."""
    _check_lengths(hypotheses, references)
    metric = BLEU(tokenize="zh" if target_lang == "zh" else "13a")
    result = metric.corpus_score(list(hypotheses), [list(references)])
    return MetricScore("BLEU", result.score, str(metric.get_signature()))


def chrf(hypotheses: Sequence[str], references: Sequence[str]) -> MetricScore:
    """Corpus chrF (character n-gram F-score, beta=2) with sacrebleu's defaults."""
    _check_lengths(hypotheses, references)
    metric = CHRF()
    result = metric.corpus_score(list(hypotheses), [list(references)])
    return MetricScore("chrF", result.score, str(metric.get_signature()))


def off_target_rate(hypotheses: Sequence[str], target_lang: str) -> float:
    """The fraction of non-empty hypotheses that the language identifier says are not in `target_lang`."""
    detected = langid.detect([text for text in hypotheses if text.strip()])
    if not detected:
        return 0.0
    return sum(lang != target_lang for lang in detected) / len(detected)


def _check_lengths(hypotheses: Sequence[str], references: Sequence[str]) -> None:
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references")
