"""Check the fitness sets that ship in suites/ (run by `make suites-check`).

Each set is read by the loader its command uses, so a mistake is reported at its
``file:line:col`` exactly as `skilleval judge-check` or `router-check` would meet it. On top
of that, the balance both commands rely on for their chance level: the router-fitness set
expects a skill in exactly half its cases, and every skill has cases that should trigger it
and near-misses. (The judge-fitness set is balanced by construction: one good and one bad
output per pair.) The benchmark suite is a plain suite; `skilleval validate` and `lint` check it.
"""

from __future__ import annotations

import sys
from collections import Counter

from skilleval.errors import SuiteError
from skilleval.runner.judgecheck import load_pairs
from skilleval.runner.routercheck import load_router_set


def main() -> int:
    try:
        pairs = load_pairs()
        router_set = load_router_set()
    except SuiteError as exc:
        print(exc, file=sys.stderr)
        return 2
    problems = []
    cases = router_set.cases
    trigger = sum(c.should_trigger for c in cases)
    if 2 * trigger != len(cases):
        problems.append(f"{trigger} of {len(cases)} cases expect a skill; half should")
    wanted = Counter(c.expect for c in cases if c.should_trigger)
    near = Counter(c.near for c in cases if c.near is not None)
    for skill in router_set.skills:
        if not wanted[skill.name] or not near[skill.name]:
            problems.append(f"skill {skill.name} needs cases that trigger it and near-misses")
    for problem in problems:
        print(f"suites/router-fitness.yaml: error: {problem}", file=sys.stderr)
    if problems:
        return 2
    print(
        f"suites: judge-fitness {len(pairs)} pairs; router-fitness {len(cases)} cases "
        f"({trigger} expect a skill), {len(router_set.skills)} skills"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
