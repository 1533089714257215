"""Pin what promptfoo decides on assertion cases that need more than an output.

A folder's ``promptfooconfig.yaml`` holds tests whose ``metadata`` says what came with the
reply: ``output`` (its text), ``steps`` (the agent's steps), ``skills`` (the skills
chosen) and ``logprobs`` (its tokens' log-probabilities, as the provider's ``logProbs``). Each assertion is handed to promptfoo's own ``assertions.runAssertion``:

* the steps become trace spans, one per step (a tool call as a span with ``tool.name`` and
  ``tool.arguments``; a final answer as ``agent response``; any other reply as
  ``invalid reply``; a call marked ``rejected`` has no span, as it never ran);
* the skills become the provider's ``skillCalls``;
* an output that is JSON is handed over parsed, as promptfoo's OpenAI provider hands over
  tool calls, except to ``tool-call-f1``, which reads text;
* an assertion's ``config.tools`` becomes the provider's config, and its
  ``config.functions`` the config of an OpenAI chat provider (never called).

promptfoo 0.123.1 imports the ``natural`` package for ``meteor`` as an ES module, where its
exports sit under ``default`` only, so every ``meteor`` check there ends in an error. The
driver runs with a module hook that hands promptfoo's meteor code natural's exports by name,
so the verdicts pinned are those of promptfoo's own METEOR code.

What promptfoo decides, or the first line of what it throws, is written to
``promptfoo-verdicts.json`` beside the config, one entry per test in order.

    python tools/promptfoo_assertion_cases.py [--scratch DIR] FOLDER ...
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from promptfoo_verdicts import PROMPTFOO, install
from ruamel.yaml import YAML

HOOKS = r"""
export async function resolve(specifier, context, next) {
  if (specifier === 'natural' && !context.parentURL?.includes('skilleval-natural-shim')) {
    return { url: new URL('./skilleval-natural-shim.mjs', import.meta.url).href, shortCircuit: true };
  }
  return next(specifier, context);
}
"""
SHIM = r"""
import natural from 'natural';
export const PorterStemmer = natural.PorterStemmer;
export const WordNet = natural.WordNet;
export default natural;
"""
REGISTER = r"""
import { register } from 'node:module';
register('./skilleval-natural-hooks.mjs', import.meta.url);
"""

DRIVER = r"""
import * as promptfoo from 'promptfoo';
import { readFileSync } from 'node:fs';

const cases = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const out = [];

function spans(steps) {
  const result = [];
  steps.forEach((step, i) => {
    const at = { spanId: `s${i}`, startTime: i * 10, endTime: i * 10 + 5, statusCode: 0 };
    if (step.tool !== undefined) {
      if (step.rejected) return;
      result.push({ ...at, name: step.tool, attributes: {
        'tool.name': step.tool, 'tool.arguments': JSON.stringify(step.args ?? {}) } });
    } else if (step.answer !== undefined) {
      result.push({ ...at, name: 'agent response', attributes: {} });
    } else {
      result.push({ ...at, name: 'invalid reply', attributes: {} });
    }
  });
  return result;
}

for (const c of cases) {
  const verdicts = [];
  for (const assertion of c.assert) {
    const base = assertion.type.replace(/^not-/, '');
    let output = c.output ?? '';
    if (base !== 'tool-call-f1') {
      try { output = JSON.parse(output); } catch { /* text */ }
    }
    let provider = { id: () => 'echo', config: {} };
    if (assertion.config?.tools) provider = { id: () => 'echo', config: { tools: assertion.config.tools } };
    if (assertion.config?.functions) {
      provider = await promptfoo.loadApiProvider('openai:chat:gpt-4o-mini', {
        options: { config: { functions: assertion.config.functions } } });
    }
    const params = {
      assertion,
      test: { vars: {}, assert: c.assert, options: {} },
      providerResponse: { output, logProbs: c.logprobs ?? undefined,
        metadata: c.skills ? { skillCalls: c.skills.map((name) => ({ name })) } : {} },
      provider,
    };
    if (c.steps) {
      params.traceId = 'trace-1';
      params.traceData = { traceId: 'trace-1', spans: spans(c.steps) };
    }
    try {
      const r = await promptfoo.assertions.runAssertion(params);
      verdicts.push({ type: assertion.type, pass: r.pass, score: r.score, reason: r.reason });
    } catch (e) {
      verdicts.push({ type: assertion.type, error: String(e?.message ?? e).split('\n')[0] });
    }
  }
  out.push({ description: c.description, asserts: verdicts });
}
console.log(JSON.stringify(out));
"""


def cases_of(config: dict[str, Any]) -> list[dict[str, Any]]:
    cases = []
    for test in config["tests"]:
        meta = test.get("metadata") or {}
        cases.append(
            {
                "description": test.get("description"),
                "assert": test["assert"],
                "output": meta.get("output", ""),
                "steps": meta.get("steps"),
                "skills": meta.get("skills"),
                "logprobs": meta.get("logprobs"),
            }
        )
    return cases


def pin(folder: Path, exe: Path) -> None:
    config = YAML(typ="safe", pure=True).load(
        (folder / "promptfooconfig.yaml").read_text(encoding="utf-8")
    )
    node = exe.parent.parent / "node" / "bin" / "node"
    with tempfile.TemporaryDirectory() as tmp:
        cases_file = Path(tmp) / "cases.json"
        cases_file.write_text(json.dumps(cases_of(config)), encoding="utf-8")
        # Inside the scratch folder, so `import 'promptfoo'` finds its node_modules.
        root = exe.parent.parent.parent
        driver = root / "skilleval-assertion-cases.mjs"
        driver.write_text(DRIVER, encoding="utf-8")
        (root / "skilleval-natural-hooks.mjs").write_text(HOOKS, encoding="utf-8")
        (root / "skilleval-natural-shim.mjs").write_text(SHIM, encoding="utf-8")
        (root / "skilleval-natural-register.mjs").write_text(REGISTER, encoding="utf-8")
        env = {
            **os.environ,
            "PROMPTFOO_DISABLE_TELEMETRY": "1",
            "PROMPTFOO_DISABLE_UPDATE": "1",
            "PROMPTFOO_CONFIG_DIR": str(Path(tmp) / "config"),
            "OPENAI_API_KEY": "unused",
        }
        done = subprocess.run(
            [
                str(node),
                "--import",
                str(root / "skilleval-natural-register.mjs"),
                str(driver),
                str(cases_file),
            ],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
    results = json.loads(done.stdout.strip().splitlines()[-1])
    pinned = {"promptfoo": PROMPTFOO, "results": results}
    (folder / "promptfoo-verdicts.json").write_text(
        json.dumps(pinned, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    print(f"{folder.name}: {len(results)} results")


def main(argv: list[str]) -> int:
    scratch = Path("/tmp/skilleval-promptfoo")
    if "--scratch" in argv:
        i = argv.index("--scratch")
        scratch = Path(argv[i + 1])
        del argv[i : i + 2]
    exe = install(scratch)
    for folder in argv:
        pin(Path(folder), exe)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
