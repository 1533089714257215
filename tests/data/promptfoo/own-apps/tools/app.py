"""An application whose reply is its tool calls, as promptfoo's Python provider returns them."""

import json


def call_api(prompt, options, context):
    reply = context["vars"]["reply"]
    try:
        return {"output": json.loads(reply)}
    except ValueError:
        return {"output": reply}
