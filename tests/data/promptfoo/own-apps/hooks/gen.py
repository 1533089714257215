"""A test generator as promptfoo calls one: generate_tests() returns the tests."""


def generate_tests():
    return [
        {"vars": {"topic": topic}, "assert": [{"type": "icontains", "value": topic}]}
        for topic in ("ants", "owls")
    ]


def with_config(config):
    return [
        {"vars": {"topic": topic}, "assert": [{"type": "icontains", "value": topic}]}
        for topic in config["topics"]
    ]
