"""The improvement report for people, on stderr: each round, each candidate, the decision."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _figure(f: Mapping[str, Any]) -> str:
    cand, cur = f["candidate"], f["current"]
    text = f"{cand['passed']}/{cand['tests']} (current {cur['passed']})"
    if cand["routed"]:
        text += f", routed {cand['routed_right']}/{cand['routed']} (current {cur['routed_right']})"
    return text


def render(doc: Mapping[str, Any], cost: Mapping[str, Any], where: str) -> str:
    sizes = doc["split"]["sizes"]
    lines = [
        f"{doc['suite']}: improving {doc['skill']} (seed {doc['settings']['seed']}, "
        f"α {doc['settings']['alpha']:g}, {doc['settings']['alpha_per_round']:.4g} per round)",
        f"  split: train {sizes['train']}, selection {sizes['selection']}, "
        f"confirmation {sizes['confirm']}",
    ]
    for record in doc["rounds"]:
        lines.append(f"  round {record['round']}:")
        for cand in doc["candidates"]:
            if cand["round"] != record["round"]:
                continue
            lines.append(f"    {cand['name']} ({cand['part']}): {cand['status']}: {cand['reason']}")
            figures = cand["figures"]
            if figures:
                for name in ("train", "selection", "confirm"):
                    lines.append(f"      {name:<9} {_figure(figures[name])}")
    lines.append(
        f"  cost: {doc['cost']['planned_requests']} planned requests; {cost['model_calls']} "
        f"answered by a model this time (the rest from the cache or the state), "
        f"{cost['seconds']} s"
    )
    lines.append(f"  report: {where}")
    interval = doc["decision"]["interval"]
    if interval is not None:
        lines.append(
            f"  the last confirmation test's lift, 95% interval [{interval[0]:.3f}, "
            f"{interval[1]:.3f}]"
        )
    lines.append(doc["decision"]["summary"])
    return "\n".join(lines)
