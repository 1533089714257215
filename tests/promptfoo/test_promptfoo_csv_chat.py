"""A chat written as JSON in a CSV row of prompts is sent as messages, as promptfoo sends it.

tests/data/promptfoo-replies/csv-chat/promptfoo-messages.json holds the messages promptfoo
0.123.1 sent for each prompt of that folder's config (see the folder's README).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from promptfoo_support import with_echo

from skilleval.errors import Location
from skilleval.runner.plan import messages_for
from skilleval.suite.load import Overrides, load_suite
from skilleval.suite.prompts import csv_prompts

FOLDER = Path(__file__).resolve().parents[1] / "data" / "promptfoo-replies" / "csv-chat"


def test_a_json_chat_row_is_sent_as_promptfoo_sends_it(tmp_path: Path) -> None:
    shutil.copytree(FOLDER, tmp_path, dirs_exist_ok=True)
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(with_echo(config.read_text(encoding="utf-8")), encoding="utf-8")
    pinned = json.loads((FOLDER / "promptfoo-messages.json").read_text(encoding="utf-8"))
    suite, _ = load_suite(config, Overrides(entry_points=False))
    sent = {
        t.prompt.label: [{"role": m.role, "content": m.content} for m in messages_for(t, None)[0]]
        for t in suite.tests
    }
    assert sent == pinned["messages"]


def test_outside_a_promptfoo_config_the_row_stays_text() -> None:
    prompts = csv_prompts(FOLDER / "prompts.csv", Location("suite.yaml", 1, 1), None)
    assert prompts[0].text is not None
    assert prompts[0].text.startswith('[{"role"')
