#!/usr/bin/env python3
"""Serves the web page of `make web` (.build/web/) on the loopback interface.

    python3 wasm/web/serve.py [--port 8000] [--directory .build/web]

`make web-serve` runs it (WEB_PORT=8000 picks the port). --port 0 takes any free port. The
first line printed is the page's address. `.wasm` files go out as `application/wasm`, which
browsers require to compile a module while it downloads. Nothing is cached, so a rebuilt page
shows on reload. Stop it with Ctrl-C.
"""
import argparse
import functools
import http.server
import pathlib
import sys

TYPES = {
    ".wasm": "application/wasm",
    ".js": "text/javascript; charset=utf-8",
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".dot": "text/plain; charset=utf-8",
    ".json": "application/json",
}


class Handler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, **TYPES}

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        super().end_headers()

    def log_message(self, format: str, *args) -> None:
        if not self.server.quiet:
            super().log_message(format, *args)


def main() -> None:
    parser = argparse.ArgumentParser(description="Serve the Actomaton web page on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=8000, help="TCP port (default 8000; 0 picks a free one)")
    parser.add_argument("--directory", default=".build/web", help="the site (default .build/web)")
    parser.add_argument("--quiet", action="store_true", help="do not log each request")
    args = parser.parse_args()

    directory = pathlib.Path(args.directory)
    if not (directory / "index.html").is_file():
        sys.exit(f"serve.py: {directory}/index.html is missing: run make web first")
    if not 0 <= args.port <= 65535:
        sys.exit(f"serve.py: --port {args.port} is not a TCP port (0-65535)")

    handler = functools.partial(Handler, directory=str(directory))
    try:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), handler)
    except OSError as error:
        sys.exit(f"serve.py: cannot listen on 127.0.0.1:{args.port}: {error.strerror}")
    server.quiet = args.quiet
    host, port = server.server_address[:2]
    print(f"http://{host}:{port}/", flush=True)
    if not args.quiet:
        print(f"Serving {directory}/ at that address, on loopback only. Ctrl-C stops.", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
