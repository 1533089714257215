"""A command-line application under test: promptfoo's exec: provider adds the prompt, the
options and the context as its last three arguments."""

import json
import sys

prompt, options, context = sys.argv[-3], json.loads(sys.argv[-2]), json.loads(sys.argv[-1])
if context["vars"].get("fail"):
    sys.stderr.write("the command failed\n")
    sys.exit(3)
print(f"  {options['config']['greeting']}, {prompt}! ({sys.argv[1]})  ")
