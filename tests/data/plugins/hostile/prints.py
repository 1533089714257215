"""A plugin that prints when imported and when it checks: stdout must stay one JSON document."""

from skilleval import Check, assertion

print("hello from the plugin's import")


@assertion("hostile-print")
def hostile_print(check: Check) -> bool:
    print("hello from the check")
    return True
