"""A prompt function as promptfoo calls one: with {vars, provider, config}."""


def build(context):
    return f"Python prompt about {context['vars']['topic']} for {context['provider']['id']}"
