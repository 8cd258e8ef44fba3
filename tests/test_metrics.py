"""BLEU and chrF against hand-computed values and sacrebleu; off-target rate on a few sentences."""

from __future__ import annotations

import math

import pytest
import sacrebleu

from nmtscale.engine.metrics import bleu, chrf, off_target_rate

HYPOTHESIS = ["the cat sat on the mat"]
REFERENCE = ["the cat sat on a mat"]


def test_bleu_matches_the_hand_computed_value():
    # n-gram precisions 5/6, 3/5, 2/4, 1/3, same length so no brevity penalty
    expected = 100 * math.prod([5 / 6, 3 / 5, 2 / 4, 1 / 3]) ** 0.25
    score = bleu(HYPOTHESIS, REFERENCE, "en")
    assert score.score == pytest.approx(expected)
    assert "tok:13a" in score.signature and "version:" in score.signature
    assert f"{score.score:.2f}" in str(score)


def test_bleu_splits_chinese_into_characters():
    # per character: 1- to 3-grams 4/5, 2/4, 1/3; 4-grams 0/2, which sacrebleu's exp smoothing makes 1/(2*2)
    score = bleu(["我喜欢猫。"], ["我喜欢狗。"], "zh")
    assert score.score == pytest.approx(100 * (4 / 5 * 2 / 4 * 1 / 3 * 1 / 4) ** 0.25)
    assert "tok:zh" in score.signature


def test_chrf_agrees_with_sacrebleu_and_its_extremes():
    assert chrf(HYPOTHESIS, REFERENCE).score == pytest.approx(
        sacrebleu.corpus_chrf(HYPOTHESIS, [REFERENCE]).score
    )
    assert chrf(REFERENCE, REFERENCE).score == pytest.approx(100.0)
    assert chrf(["xyz"], ["abc"]).score == 0.0
    assert chrf(HYPOTHESIS, REFERENCE).signature.startswith("nrefs:1")


def test_metrics_refuse_unaligned_lists():
    with pytest.raises(ValueError, match="2 hypotheses but 1 references"):
        bleu(HYPOTHESIS * 2, REFERENCE, "en")


def test_off_target_rate_counts_hypotheses_in_the_wrong_language():
    hypotheses = [
        "Die Datei konnte nicht gespeichert werden.",
        "The file could not be saved.",
        "Le fichier n'a pas pu être enregistré.",
        "无法保存文件。",
        "",  # empty output is not in any language: it does not count
    ]
    assert off_target_rate(hypotheses, "de") == pytest.approx(3 / 4)
    assert off_target_rate(hypotheses, "zh") == pytest.approx(3 / 4)
    assert off_target_rate([], "de") == 0.0
