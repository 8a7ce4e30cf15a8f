"""The LoCoMo runner on a tiny file in the same format, through `jido-kg bench locomo`."""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner

from api.cli import cli

SAMPLE = [{
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
        {"question": "What did Bo make in pottery?", "answer": "a bowl", "evidence": ["D1:2"],
         "category": 1},
        {"question": "Unanswerable?", "answer": "", "evidence": [], "category": 3},
    ],
}]
AUDIT = [{"question_id": "locomo_0_qa2", "correct_evidence": ["D2:2"]}]


def test_bench_locomo_prints_a_table_and_the_recall_line(tmp_path: Path) -> None:
    data, audit = tmp_path / "data.json", tmp_path / "audit.json"
    data.write_text(json.dumps(SAMPLE))
    audit.write_text(json.dumps(AUDIT))
    result = CliRunner().invoke(cli, ["bench", "locomo", str(data), str(audit),
                                      "--no-embeddings"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.strip().splitlines()
    assert lines[0].split()[:2] == ["category", "n"]
    assert any(line.startswith("4 single-hop") for line in lines)
    assert re.fullmatch(r"recall@10 (0|1)\.\d{4}", lines[-1])
    assert float(lines[-1].split()[1]) == 1.0  # 4 memories: every gold turn is in the top 10
