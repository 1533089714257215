"""The OpenAI-style server that promptfoo-verdicts.json was pinned against.

Every chat request gets the same reply, ``CONTENT``. Run it, then
``promptfoo eval -c promptfooconfig.yaml -o out.json --no-cache``.
"""

from __future__ import annotations

import http.server
import json

CONTENT = '{"sentiment": "positive", "score": 0.9}'


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (the name http.server calls)
        size = int(self.headers.get("content-length", 0))
        request = json.loads(self.rfile.read(size))
        reply = {
            "id": "reply",
            "object": "chat.completion",
            "created": 0,
            "model": request.get("model"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": CONTENT},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


if __name__ == "__main__":
    http.server.HTTPServer(("127.0.0.1", 8765), Handler).serve_forever()
