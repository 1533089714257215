"""A small application under test, called the way promptfoo calls a Python provider."""

import asyncio


def call_api(prompt, options, context):
    mode = context["vars"].get("mode", "")
    if mode == "raise":
        raise ValueError("the app failed")
    if mode == "error":
        return {"error": "the app refused"}
    if mode == "data":
        return {"output": {"topic": context["vars"]["topic"], "words": len(prompt.split())}}
    prefix = options["config"]["prefix"]
    return {"output": f"{prefix} {prompt.upper()}", "tokenUsage": {"prompt": 3, "completion": 4}}


async def call_async(prompt, options, context):
    await asyncio.sleep(0)
    return {"output": f"async: {prompt}"}
