"""Serve telcoenv to remote trainers over OpenEnv's HTTP/WebSocket protocol (needs the extra).

    pip install "telcoenv[openenv]"
    python examples/serve_openenv.py --env troubleshooting --port 8000 --max-sessions 8

Every WebSocket connection to ``ws://HOST:PORT/ws`` is one session with its own environment;
``telcoenv.integrations.openenv.TelcoEnvClient(base_url="http://HOST:PORT")`` is its client
(``/schema``, ``/metadata`` and ``/health`` are plain HTTP). ``--no-embedder`` skips IRA and RA
(no embedding model is loaded).
"""

from __future__ import annotations

import argparse

import uvicorn

from telcoenv.integrations.openenv import DEFAULT_MAX_CONCURRENT_ENVS, create_telcoenv_app


def main(argv: list[str] | None = None) -> None:
    """Parse the command line and run uvicorn until interrupted."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="troubleshooting", help="telcoenv name or Gymnasium id")
    parser.add_argument("--lang", choices=["en", "ar"], default="en")
    parser.add_argument("--max-steps", type=int, default=20)
    parser.add_argument("--no-embedder", action="store_true", help="skip IRA and RA")
    parser.add_argument("--max-sessions", type=int, default=DEFAULT_MAX_CONCURRENT_ENVS)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    app = create_telcoenv_app(
        args.env,
        max_concurrent_envs=args.max_sessions,
        lang=args.lang,
        max_steps=args.max_steps,
        embedder=None if args.no_embedder else "multilingual",
    )
    uvicorn.run(app, host=args.host, port=args.port)


if __name__ == "__main__":
    main()
