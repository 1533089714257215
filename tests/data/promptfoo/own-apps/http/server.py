"""A small HTTP application under test: `python server.py PORT` serves it on 127.0.0.1.

POST /chat answers a JSON body {"message", "topic"} with JSON naming both and the
X-Topic header; POST /fail answers 503; GET /plain answers text from the `q` parameter.
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse


class Handler(BaseHTTPRequestHandler):
    def _send(self, status: int, body: str, kind: str) -> None:
        data = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length).decode("utf-8")
        if self.path == "/fail":
            self._send(503, json.dumps({"error": "busy"}), "application/json")
            return
        body = json.loads(raw)
        reply = {
            "reply": f"echo: {body['message']}",
            "topic": body.get("topic"),
            "header": self.headers.get("X-Topic"),
            "type": self.headers.get("Content-Type"),
        }
        self._send(200, json.dumps(reply), "application/json")

    def do_GET(self) -> None:
        query = parse_qs(urlparse(self.path).query)
        self._send(200, "plain: " + query.get("q", [""])[0], "text/plain")

    def log_message(self, format: str, *args: object) -> None:
        pass


def serve(port: int) -> ThreadingHTTPServer:
    return ThreadingHTTPServer(("127.0.0.1", port), Handler)


if __name__ == "__main__":
    serve(int(sys.argv[1])).serve_forever()
