"""Every code block of README.md and docs/*.md is executed or validated, so the docs cannot rot.

How each kind of fenced block is checked:

* ``python``: executed in a fresh namespace, in page order, in a temporary folder that the
  page's blocks share; it must not raise. The blocks run in one interpreter, a subprocess the
  pages share (one per block would cost a second each to import telcoenv and load the
  catalogues); a page that changes process-wide state gets its own (``OWN_INTERPRETER``).
* ``bash`` / ``sh`` / ``console`` (``$ `` lines): every command line (``\\`` continues it, ``#``
  starts a comment) runs for real in that folder with the venv's ``telcoenv`` script first on
  PATH, and must exit 0. Only ``telcoenv`` commands run (after optional ``NAME=value``
  assignments). The few other lines are listed in ``NOT_RUN`` with the reason they cannot run
  here; any line that is neither fails the test.
* ``yaml`` / ``json`` / ``toml``: parsed. Intent entries, blueprints and tool specs (recognised
  by their fields) are loaded with the real loaders on a copy of the packaged data, and must be
  in the catalogues they give; an entry-point table must be the one the tested plug-in declares.
* ``text``: a source layout tree (docs/design.md); every path it names must exist, every module
  and subpackage of ``telcoenv/`` must be in it, and a folder described file by file must name
  all its ``.py`` and ``.yaml`` files (except private ``_*`` ones).
* ``<!-- docs-test: save-as NAME -->`` on the line before a block saves the block as NAME in the
  page's folder first, so that later blocks of the page can use it.
* A block of any other language, or without one, fails the test.
"""

from __future__ import annotations

import configparser
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.conftest import PLUGINS, REPO_ROOT, edit_yaml

PAGES = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
BIN = Path(sys.executable).parent

KINDS = {"python", "bash", "sh", "console", "yaml", "json", "toml", "text"}

# Shell lines shown in the docs that this test does not run, and why. Keep it short: a command
# that can run with small arguments belongs in a block as a telcoenv command instead.
NOT_RUN = {
    "make install": "creates .venv and installs torch and every extra from the network (minutes)",
    "make demo": "runs 3 agents x 392 episodes and writes demo-results.sqlite and demo-report/ "
    "into the checkout; the telcoenv demo/evaluate/report commands it calls run below with "
    "small grids",
    "make test": "runs ruff and this whole test suite, this test included",
    "make bench": "the benchmarks take many minutes and measure the machine; "
    "docs/performance.md reports their results",
    "pip install -c constraints.txt torch==2.13.0 .": "installs packages from the network",
    "pip install --no-deps verl==0.9.1": "installs packages from the network",
    "python benchmarks/bench_local_llm.py --gguf qwen2.5-coder-1.5b-instruct-q4_k_m.gguf "
    "--server-python llm/bin/python --label after --tool-format compact --out bench-llm/": "serves "
    "a 1 GiB model on the CPU and plays 8 episodes (about 15 minutes)",
}

FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
SAVE_AS = re.compile(r"<!-- docs-test: save-as (\S+) -->\s*$")
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    kind: str
    text: str
    save_as: str | None

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO_ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        save = SAVE_AS.search(before)
        found.append(
            Block(
                page,
                text.count("\n", 0, match.start()) + 1,
                match.group(1).strip(),
                match.group(2),
                save.group(1) if save else None,
            )
        )
    return found


ALL_BLOCKS = [block for page in PAGES for block in blocks(page)]


def _environment() -> dict[str, str]:
    return {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def shell_lines(block: Block) -> list[str]:
    """The command lines of a shell block, continuations joined, comments and prompts dropped."""
    text = block.text.replace("\\\n", " ")
    lines = []
    for line in text.splitlines():
        if block.kind == "console":
            if not line.startswith("$ "):
                continue  # output shown after a command
            line = line[2:]
        if shlex.split(line, comments=True):
            lines.append(line)
    return lines


def run_shell_line(line: str, block: Block, cwd: Path) -> None:
    words = shlex.split(line, comments=True)
    env = _environment()
    while words and ASSIGNMENT.match(words[0]):
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    if words[0] != "telcoenv":
        assert " ".join(words) in NOT_RUN, (
            f"{block.where}: {line!r} is neither a telcoenv command nor in NOT_RUN"
        )
        return
    words[0] = shutil.which("telcoenv", path=env["PATH"]) or "telcoenv"
    done = subprocess.run(
        words, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, (
        f"{block.where}: {line!r} exited {done.returncode}\n{done.stdout[-2000:]}\n"
        f"{done.stderr[-3000:]}"
    )


# Runs in the page's interpreter: each request is a block's code, executed in a fresh
# namespace with its output captured; the answer is one JSON line on the real stdout.
WORKER = """
import contextlib, io, json, os, sys, traceback
answers = sys.stdout
for request in sys.stdin:
    request = json.loads(request)
    os.chdir(request["cwd"])
    output = io.StringIO()
    try:
        with contextlib.redirect_stdout(output):
            exec(compile(request["code"], request["where"], "exec"), {"__name__": "__main__"})
        answer = {"ok": True}
    except BaseException:
        answer = {"ok": False, "error": traceback.format_exc(), "output": output.getvalue()}
    answers.write(json.dumps(answer) + "\\n")
    answers.flush()
"""


class PythonSession:
    """An interpreter that runs Python blocks, each in the folder of its page."""

    def __init__(self, folder: Path) -> None:
        self.log = (folder / "python-session.log").open("w+", encoding="utf-8")
        self.process = subprocess.Popen(
            [sys.executable, "-c", WORKER],
            cwd=folder,
            env=_environment(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
        )

    def run(self, block: Block, cwd: Path) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        request = {"code": block.text, "where": block.where, "cwd": str(cwd)}
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline()
        if not answer:
            self.log.seek(0)
            pytest.fail(f"{block.where}: the interpreter died\n{self.log.read()[-4000:]}")
        result = json.loads(answer)
        assert result["ok"], f"{block.where}: the block failed\n{result['error'][-4000:]}"

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=60)
        self.log.close()


# --- every block is of a known kind ---------------------------------------------------------------


def test_every_block_is_of_a_kind_the_tests_check():
    unknown = [f"{b.where} ({b.kind or 'no language'})" for b in ALL_BLOCKS if b.kind not in KINDS]
    assert not unknown, "add a language the tests know, or extend this test: " + ", ".join(unknown)


def test_the_not_run_list_is_short_and_still_used():
    shown = {
        " ".join(shlex.split(line, comments=True))
        for block in ALL_BLOCKS
        if block.kind in ("bash", "sh", "console")
        for line in shell_lines(block)
    }
    assert len(NOT_RUN) <= 8
    assert set(NOT_RUN) <= shown, f"not shown any more: {sorted(set(NOT_RUN) - shown)}"


# --- the runnable blocks, page by page ------------------------------------------------------

RUNNABLE = {"python", "bash", "sh", "console"}
PAGES_TO_RUN = [p for p in PAGES if any(b.kind in RUNNABLE for b in blocks(p))]
# Pages whose blocks change process-wide state, which would leak into the pages run after them:
# extending.md registers a tool implementation in the network domain's registry.
OWN_INTERPRETER = {"docs/extending.md"}


@pytest.fixture(scope="module")
def shared_session(tmp_path_factory: pytest.TempPathFactory):
    session = PythonSession(tmp_path_factory.mktemp("python-session"))
    yield session
    session.close()


@pytest.mark.slow  # an interpreter and telcoenv commands in subprocesses
@pytest.mark.parametrize(
    "page", PAGES_TO_RUN, ids=[str(p.relative_to(REPO_ROOT)) for p in PAGES_TO_RUN]
)
def test_the_page_runs(page: Path, tmp_path: Path, shared_session: PythonSession):
    """The page's blocks in order, as a reader would run them, in one folder."""
    own = str(page.relative_to(REPO_ROOT)) in OWN_INTERPRETER
    session = PythonSession(tmp_path) if own else shared_session
    try:
        for block in blocks(page):
            if block.save_as:
                target = tmp_path / block.save_as
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(block.text, encoding="utf-8")
            if block.kind == "python":
                session.run(block, tmp_path)
            elif block.kind in ("bash", "sh", "console"):
                for line in shell_lines(block):
                    run_shell_line(line, block, tmp_path)
    finally:
        if own:
            session.close()


# --- data blocks: parsed, and validated with the real loaders ------------------------------------


def _parse(block: Block) -> object:
    if block.kind == "yaml":
        return yaml.safe_load(block.text)
    if block.kind == "json":
        return json.loads(block.text)
    return tomllib.loads(block.text)


def _parsed(block: Block) -> object:
    try:
        return _parse(block)
    except (yaml.YAMLError, json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        pytest.fail(f"{block.where}: does not parse: {exc}")


def _parsed_or_none(block: Block) -> object:
    """For sorting blocks at collection; test_data_blocks_parse reports what does not parse."""
    try:
        return _parse(block)
    except (yaml.YAMLError, json.JSONDecodeError, tomllib.TOMLDecodeError):
        return None


DATA_BLOCKS = [b for b in ALL_BLOCKS if b.kind in ("yaml", "json", "toml")]


@pytest.mark.parametrize("block", DATA_BLOCKS, ids=[b.where for b in DATA_BLOCKS])
def test_data_blocks_parse(block: Block):
    assert _parsed(block) is not None, f"{block.where}: empty"


def _is_intent_list(document: object) -> bool:
    return isinstance(document, list) and all(
        isinstance(i, dict) and {"key", "env_name", "gold_chain"} <= set(i) for i in document
    )


def _is_blueprint(document: object) -> bool:
    return isinstance(document, dict) and {"intent", "blueprint_id"} <= set(document)


def _is_tool_spec(document: object) -> bool:
    return isinstance(document, dict) and "x-telcoenv" in document


DATA_PAGES = [
    p
    for p in PAGES
    if any(
        _is_intent_list(d) or _is_blueprint(d) or _is_tool_spec(d)
        for d in (_parsed_or_none(b) for b in blocks(p) if b.kind in ("yaml", "json"))
    )
]


@pytest.mark.parametrize(
    "page", DATA_PAGES, ids=[str(p.relative_to(REPO_ROOT)) for p in DATA_PAGES]
)
def test_intents_blueprints_and_tool_specs_load_with_the_real_loaders(page: Path, data_copy: Path):
    """The page's data files, added to a copy of the packaged data, load as the packaged ones
    do (JSON Schemas and every rule of the loaders) and land in the catalogues."""
    from telcoenv.domains.bss.blueprints import load_care_catalog
    from telcoenv.domains.network.loading import load_catalog

    intents, blueprints, tools = [], [], []
    for block in blocks(page):
        if block.kind not in ("yaml", "json"):
            continue
        document = _parsed(block)
        if _is_intent_list(document):
            intents += document
        elif _is_blueprint(document):
            blueprints.append(document)
        elif _is_tool_spec(document):
            tools.append(document)
    data = data_copy
    edit_yaml(data / "intents.yaml", lambda taxonomy: taxonomy["intents"].extend(intents))
    for blueprint in blueprints:
        folder = data / "blueprints" / ("bss" if "customer" in blueprint else "")
        path = folder / blueprint["intent"] / f"{blueprint['blueprint_id']}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(blueprint, allow_unicode=True), encoding="utf-8")
    for spec in tools:
        path = data / "tools" / f"{spec['function']['name']}.json"
        path.write_text(json.dumps(spec), encoding="utf-8")

    network = load_catalog(data / "intents.yaml", data / "blueprints", data / "tools")
    care = load_care_catalog(data / "intents.yaml", data / "blueprints" / "bss", data / "tools")
    for intent in intents:
        catalog = care if intent.get("domain") == "bss" else network
        assert catalog.intent(intent["key"]).env_name == intent["env_name"]
    for blueprint in blueprints:
        catalog = care if "customer" in blueprint else network
        assert catalog.blueprint(blueprint["blueprint_id"]).intent == blueprint["intent"]
    for spec in tools:
        catalog = care if spec["x-telcoenv"].get("domain") == "bss" else network
        assert spec["function"]["name"] in catalog.tools


TOML_BLOCKS = [b for b in DATA_BLOCKS if b.kind == "toml"]


@pytest.mark.parametrize("block", TOML_BLOCKS, ids=[b.where for b in TOML_BLOCKS])
def test_entry_points_are_those_the_tested_plugin_declares(block: Block):
    document = _parsed(block)
    assert isinstance(document, dict)
    declared = document["project"]["entry-points"]["telcoenv.domains"]
    plugin = configparser.ConfigParser()
    plugin.read(PLUGINS / "telcoenv_fiber-0.1.0.dist-info" / "entry_points.txt")
    assert declared == dict(plugin["telcoenv.domains"]), block.where


# --- the layout tree ------------------------------------------------------------------------------

TEXT_BLOCKS = [b for b in ALL_BLOCKS if b.kind == "text"]
ENTRY_INDENT = 10  # tree entries are indented by at most 8 columns; descriptions sit further
FILE_NAME = re.compile(r"\b[\w-]+\.(?:py|yaml|json|md|sh)\b")


def layout_paths(block: Block) -> dict[Path, list[str]]:
    """Each path of the tree (globs allowed, ``<X>`` read as ``*``) and the file names its
    description mentions."""
    stack: list[tuple[int, Path]] = []
    paths: dict[Path, list[str]] = {}
    current: Path | None = None
    for line in block.text.splitlines():
        indent = len(line) - len(line.lstrip(" "))
        if not line.strip():
            continue
        if indent >= ENTRY_INDENT:  # a description continued
            assert current is not None, f"{block.where}: description before any entry"
            paths[current] += FILE_NAME.findall(line)
            continue
        name, _, description = line.strip().partition("  ")
        while stack and stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1] if stack else Path()
        current = parent / re.sub(r"<[^>]+>", "*", name)
        paths[current] = FILE_NAME.findall(description)
        if name.endswith("/"):
            stack.append((indent, current))
    return paths


@pytest.mark.parametrize("block", TEXT_BLOCKS, ids=[b.where for b in TEXT_BLOCKS])
def test_every_path_of_the_layout_exists(block: Block):
    paths = layout_paths(block)
    assert paths, f"{block.where}: a text block must be a layout tree"
    missing: list[str] = []
    unlisted: list[str] = []
    for path, mentioned in paths.items():
        if not list(REPO_ROOT.glob(str(path))):
            missing.append(str(path))
        folder = REPO_ROOT / path
        if folder.is_dir() and mentioned:  # a folder described file by file: all of them
            missing += [str(path / m) for m in mentioned if not (folder / m).exists()]
            files = [f for f in folder.iterdir() if f.suffix in (".py", ".yaml")]
            unlisted += [
                str(path / f.name)
                for f in files
                if f.name not in mentioned and not f.name.startswith("_")
            ]
    assert not missing, f"{block.where}: the layout names what does not exist: {missing}"
    assert not unlisted, f"{block.where}: the layout leaves out {unlisted}"
    listed = {p.as_posix().rstrip("/") for p in paths}
    package = REPO_ROOT / "telcoenv"
    modules = {
        f"telcoenv/{p.name}"
        for p in package.iterdir()
        if (p.suffix == ".py" or (p.is_dir() and (p / "__init__.py").exists()))
    }
    assert modules <= listed, f"{block.where}: not in the layout: {sorted(modules - listed)}"
