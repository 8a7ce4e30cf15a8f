"""The LoCoMo runner on tiny files in the same format: scoring, the audit's corrections, the
printed metrics of `jido-kg bench locomo`, and the leave-one-conversation-out fit."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from api.cli import cli
from kg.errors import ValidationError
from kg.recall.fusion import FusionWeights
from kg.recall.locomo import KS, LocomoResult, LocomoSet, Scored, _score, locomo_files
from kg.recall.locomo_fit import cross_validate

SAMPLE: list[dict[str, Any]] = [{
    "sample_id": "conv-x",
    "conversation": {
        "speaker_a": "Ann", "speaker_b": "Bo",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a puppy named Rex."},
            {"speaker": "Bo", "dia_id": "D1:2", "text": "Lovely! I started pottery classes."},
        ],
        "session_2_date_time": "10:00 am on 9 June, 2023",
        "session_2": [
            {"speaker": "Ann", "dia_id": "D2:1", "text": "Rex chewed my shoes yesterday."},
            {"speaker": "Bo", "dia_id": "D2:2", "text": "My pottery bowl cracked in the kiln."},
        ],
    },
    "qa": [
        {"question": "What is the name of Ann's puppy?", "answer": "Rex", "evidence": ["D1:1"],
         "category": 4},
        {"question": "What did Bo make in pottery?", "answer": "a bowl", "evidence": ["D1:1"],
         "category": 1},
        {"question": "Unanswerable?", "answer": "", "evidence": [], "category": 3},
    ],
}]
# The audit numbers questions from 0: qa1 is the second question (its text says so too).
AUDIT = [{"question_id": "locomo_0_qa1", "question": "What did Bo make in pottery?",
          "correct_evidence": ["D2:2"]}]


def cakes(sample_id: str) -> dict[str, Any]:
    """A conversation of 12 dated sessions alike but for the cake, and one dated question."""
    months = ["January", "February", "March", "April", "May", "June", "July", "August",
              "September", "October", "November", "December"]
    flavours = ["lemon", "carrot", "cherry", "plum", "apple", "pear", "peach", "mango", "lime",
                "fig", "date", "kiwi"]
    conversation: dict[str, Any] = {"speaker_a": "Ann", "speaker_b": "Bo"}
    for n, (month, flavour) in enumerate(zip(months, flavours, strict=True), start=1):
        conversation[f"session_{n}_date_time"] = f"10:00 am on 7 {month}, 2023"
        conversation[f"session_{n}"] = [
            {"speaker": "Ann", "dia_id": f"D{n}:1", "text": f"I baked a {flavour} cake."}]
    return {"sample_id": sample_id, "conversation": conversation, "qa": [
        {"question": "What cake did Ann bake on 7 January, 2023?", "evidence": ["D1:1"],
         "category": 2}]}


def write(tmp_path: Path, data: object, audit: object | None = None) -> Path:
    (tmp_path / "locomo_x.json").write_text(json.dumps(data))
    if audit is not None:
        (tmp_path / "audit_x.json").write_text(json.dumps(audit))
    return tmp_path


def test_bench_locomo_prints_recall_at_k_mrr_by_category_and_latency(tmp_path: Path) -> None:
    folder = write(tmp_path, SAMPLE, AUDIT)
    result = CliRunner().invoke(cli, ["bench", "locomo", str(folder), "--no-embeddings"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.strip().splitlines()
    assert lines[0].split() == ["category", "n", "@5", "@10", "@20", "@25", "@50", "MRR"]
    rows = {line[:16].strip(): line[16:].split() for line in lines[1:4]}
    assert set(rows) == {"1 multi-hop", "4 single-hop", "all"}
    assert rows["all"][0] == "2"  # the question without evidence is not scored
    assert all(float(v) == 1.0 for v in rows["all"][1:6])  # 4 memories: all within the top 5
    assert 0.5 <= float(rows["all"][6]) <= 1.0
    assert re.fullmatch(r"recall p50 \d+\.\d ms, p95 \d+\.\d ms \(2 calls\)", lines[4])
    assert re.fullmatch(r"recall@10 (0|1)\.\d{4}", lines[-1])


def test_audit_corrections_apply_to_the_question_they_name(tmp_path: Path) -> None:
    folder = write(tmp_path, SAMPLE, AUDIT)
    dataset = LocomoSet.load(*locomo_files(folder))
    try:
        assert [gold for _, _, gold in dataset.questions[0]] == [{"D1:1"}, {"D2:2"}, set()]
    finally:
        dataset.close()
    # Without its question text an entry is placed by its 0-based number.
    (tmp_path / "audit_x.json").write_text(json.dumps(
        [{"question_id": "locomo_0_qa0", "correct_evidence": ["D2:1", "D1:2"]}]))
    dataset = LocomoSet.load(*locomo_files(folder))
    try:
        assert dataset.questions[0][0][2] == {"D2:1", "D1:2"}
        assert dataset.questions[0][1][2] == {"D1:1"}  # the original evidence
    finally:
        dataset.close()


def test_scores_are_recall_at_k_and_the_reciprocal_rank_of_the_first_evidence() -> None:
    found = [{"D1:1"}, {"D1:2"}, {"D1:3"}] + [{"x"}] * 10 + [{"D9:9"}]
    scored = _score("c", 1, {"D1:3", "D9:9"}, found)
    assert scored.reciprocal_rank == pytest.approx(1 / 3)
    assert scored.recall == {5: 0.5, 10: 0.5, 20: 1.0, 25: 1.0, 50: 1.0}
    assert _score("c", 1, {"D7:7"}, found).reciprocal_rank == 0.0
    result = LocomoResult(questions=[scored, Scored("c", 2, dict.fromkeys(KS, 1.0), 1.0)])
    assert result.mean(10) == 0.75 and result.mean(10, 1) == 0.5
    assert result.mrr() == pytest.approx((1 / 3 + 1) / 2)
    assert result.latency() == "no recalls"


def test_a_folder_needs_exactly_one_data_file(tmp_path: Path) -> None:
    write(tmp_path, SAMPLE)
    (tmp_path / "locomo_y.json").write_text("[]")
    with pytest.raises(ValidationError, match="exactly one"):
        locomo_files(tmp_path)
    assert locomo_files(tmp_path / "locomo_x.json") == (tmp_path / "locomo_x.json", None)


def test_cross_validation_fits_on_the_other_conversations(tmp_path: Path) -> None:
    folder = write(tmp_path, [cakes("a"), cakes("b")])
    dataset = LocomoSet.load(*locomo_files(folder))
    try:
        # Without the time key the asked-for (oldest) session ranks last: recall@10 is 0.
        assert dataset.evaluate(mode="text", weights=FusionWeights(time=0.0)).mean(10) == 0.0
        cv = cross_validate(dataset, mode="text", grid={"semantic": (0.5,), "time": (0.0, 2.0),
                                                        "cue": (0.0,)})
    finally:
        dataset.close()
    assert [f.held_out for f in cv.folds] == ["locomo-a", "locomo-b"]
    assert all(f.weights.time == 2.0 and f.held_out_recall == 1.0 for f in cv.folds)
    assert cv.pooled == 1.0 and cv.best_on_all.time == 2.0
    assert "held-out recall@10 1.0000" in cv.report()


def test_bench_locomo_cv_prints_the_folds_and_the_held_out_recall(tmp_path: Path) -> None:
    folder = write(tmp_path, [cakes("a"), cakes("b")])
    result = CliRunner().invoke(cli, ["bench", "locomo", str(folder), "--no-embeddings",
                                      "--mode", "text", "--cv"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.strip().splitlines()
    assert lines[-1] == "recall@10 1.0000"  # with the default time key
    folds = [line for line in lines if line.startswith("  held out locomo-")]
    assert len(folds) == 2 and all("time=2" in line for line in folds)
    assert lines[-2].startswith("held-out recall@10 1.0000; fitted on all:")
