#!/usr/bin/env python3
"""Side-by-side benchmark: `baton agent`, `codex exec` and `pi -p` on one scripted task.

One baton-mock server answers every agent from one rules script: the first model
request of a run gets a call to the agent's own file-reading tool (baton and pi:
`read {"path": "hello.txt"}`, codex: `exec_command {"cmd": "cat hello.txt"}`), the
second (which carries the tool result) gets the final answer. Runs are interleaved
round-robin so that drift in the machine's load hits every agent alike.

Each run is checked: exit status 0, the scripted answer in the agent's final
message, exactly two model requests in the mock's log, and the file's content in
the second request (the tool really ran and its result went back to the model).

Standard library only. See bench/README.md for what is measured and how.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
BATON = ROOT / "target" / "release" / "baton"
MOCK = ROOT / "target" / "release" / "baton-mock"
NODE_BIN = BENCH / "node_modules" / ".bin"

BUILD_HINT = "cargo build --release -p baton-testkit --bins && cargo build --release -p baton-cli"
NPM_HINT = "npm install --prefix bench"

PROMPT = "What does hello.txt say? Read it, then answer in one line."
FILE_TEXT = "the bench phrase is violet-otter-42\n"
FILE_MARK = "violet-otter-42"
ANSWER = "hello.txt says: the bench phrase is violet-otter-42 (BENCH-OK)"
ANSWER_MARK = "BENCH-OK"

RULES = {
    "rules": [
        {
            "when": {"tool_offered": "exec_command", "last_is_tool_result": False},
            "step": {"tool_call": {"name": "exec_command", "arguments": {"cmd": "cat hello.txt"}}},
        },
        {
            "when": {"tool_offered": "read", "last_is_tool_result": False},
            "step": {"tool_call": {"name": "read", "arguments": {"path": "hello.txt"}}},
        },
        {"when": {"last_is_tool_result": True}, "step": {"text": ANSWER}},
    ],
    # Anything else is a bug in the bench: fail the agent's request loudly.
    "steps": [],
}

MODEL_SUFFIXES = ("/chat/completions", "/responses", "/messages")

PR_SET_CHILD_SUBREAPER = 36


# --------------------------------------------------------------------------- agents


@dataclass
class Agent:
    name: str
    argv: list[str]
    env: dict[str, str]
    final_answer: Callable[[str], str | None]
    note: str = ""


def json_lines(stdout: str) -> list[dict]:
    events = []
    for line in stdout.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return events


def baton_answer(stdout: str) -> str | None:
    for event in reversed(json_lines(stdout)):
        if event.get("type") == "session.completed":
            return event.get("final_message")
    return None


def codex_answer(stdout: str) -> str | None:
    for event in reversed(json_lines(stdout)):
        item = event.get("item") or {}
        if event.get("type") == "item.completed" and item.get("type") == "agent_message":
            return item.get("text")
    return None


def pi_answer(stdout: str) -> str | None:
    for event in reversed(json_lines(stdout)):
        if event.get("type") != "agent_end":
            continue
        for message in reversed(event.get("messages") or []):
            if message.get("role") != "assistant":
                continue
            texts = [c.get("text", "") for c in message.get("content") or [] if c.get("type") == "text"]
            return "".join(texts)
    return None


def base_env(home: Path, tmp: Path) -> dict[str, str]:
    """A small, explicit environment: no API keys or user config leak into a run."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "TMPDIR": str(tmp),
        "LANG": "C.UTF-8",
        "NO_COLOR": "1",
    }


def make_agents(args, url: str, tmp: Path, work: Path) -> tuple[list[Agent], dict[str, str]]:
    agents: list[Agent] = []
    skipped: dict[str, str] = {}
    wanted = args.agents

    def home(name: str) -> Path:
        path = tmp / "homes" / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    temp = tmp / "tmp"
    temp.mkdir(exist_ok=True)

    baton_kinds = {
        "baton": ("openai", f"{url}/v1", "Chat Completions"),
        "baton-responses": ("openai-responses", f"{url}/v1", "Responses"),
        "baton-anthropic": ("anthropic", url, "Anthropic Messages"),
    }
    for name, (kind, base, api) in baton_kinds.items():
        if name not in wanted:
            continue
        baton = Path(args.baton)
        if not baton.is_file():
            skipped[name] = f"{baton} is missing; build it with: {BUILD_HINT}"
            continue
        h = home(name)
        config = h / "baton.toml"
        text = f'[providers.mock]\nkind = "{kind}"\nbase_url = "{base}"\n'
        if kind == "anthropic":
            # baton wants a key for this kind (the mock ignores it). Without
            # api_key_env it asks for ANTHROPIC_API_KEY but does not read it.
            text += 'api_key_env = "MOCK_API_KEY"\n'
        config.write_text(text)
        env = base_env(h, temp) | {"BATON_CONFIG": str(config), "MOCK_API_KEY": "mock"}
        argv = [str(baton), "agent", "--json", "--model", "mock/mock-model", "--cwd", str(work), PROMPT]
        agents.append(Agent(name, argv, env, baton_answer, f"baton agent, {api}"))

    if "codex" in wanted:
        codex = shutil.which(args.codex) or args.codex
        if not Path(codex).is_file():
            skipped["codex"] = f"{args.codex} is missing; install it with: {NPM_HINT}"
        else:
            h = home("codex")
            (h / "config.toml").write_text(
                "\n".join(
                    [
                        'model_provider = "mock"',
                        # gpt-5.5 gets ordinary function tools (exec_command) from codex.
                        'model = "gpt-5.5"',
                        'approval_policy = "never"',
                        'sandbox_mode = "danger-full-access"',
                        "check_for_update_on_startup = false",
                        "[features]",
                        "plugins = false",
                        "[analytics]",
                        "enabled = false",
                        "[model_providers.mock]",
                        'name = "mock"',
                        f'base_url = "{url}/v1"',
                        'wire_api = "responses"',
                        'env_key = "MOCK_API_KEY"',
                        "",
                    ]
                )
            )
            # TMPDIR must lie outside CODEX_HOME.
            env = base_env(h, temp) | {"CODEX_HOME": str(h), "MOCK_API_KEY": "mock"}
            argv = [codex, "exec", "--json", "--skip-git-repo-check", "--ephemeral", PROMPT]
            agents.append(Agent("codex", argv, env, codex_answer, "codex exec, Responses"))

    if "pi" in wanted:
        pi = shutil.which(args.pi) or args.pi
        if not Path(pi).is_file():
            skipped["pi"] = f"{args.pi} is missing; install it with: {NPM_HINT}"
        else:
            h = home("pi")
            models = {
                "providers": {
                    "mock": {
                        "baseUrl": f"{url}/v1",
                        "api": "openai-completions",
                        "apiKey": "mock",
                        "models": [{"id": "mock-model"}],
                    }
                }
            }
            (h / "models.json").write_text(json.dumps(models))
            env = base_env(h, temp) | {
                "PI_CODING_AGENT_DIR": str(h),
                "PI_OFFLINE": "1",
                "PI_SKIP_VERSION_CHECK": "1",
                "PI_TELEMETRY": "0",
            }
            argv = [pi, "-p", "--mode", "json", "--no-session", "--provider", "mock", "--model", "mock-model", PROMPT]
            agents.append(Agent("pi", argv, env, pi_answer, "pi -p, Chat Completions"))
    return agents, skipped


# --------------------------------------------------------------------------- processes


def children_of(pid: int) -> list[int]:
    kids: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return kids
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                kids.extend(int(k) for k in f.read().split())
        except (OSError, ValueError):
            continue
    return kids


def tree_of(pid: int) -> list[int]:
    seen, todo = [], [pid]
    while todo:
        p = todo.pop()
        seen.append(p)
        todo.extend(children_of(p))
    return seen


def pss_bytes(pid: int) -> int:
    """Proportional set size: pages shared by several processes (a forked child, a
    library) are split between them, so a sum over a tree counts each page once."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def cpu_ns_of(pid: int) -> int:
    """CPU time of all threads of a live process, from schedstat (nanoseconds)."""
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return total


class Sampler(threading.Thread):
    """Samples the summed PSS of a process tree, and enforces the run's timeout."""

    def __init__(self, pid: int, interval: float, timeout: float):
        super().__init__(daemon=True)
        self.pid = pid
        self.interval = interval
        self.timeout = timeout
        self.stop = threading.Event()
        self.peak = 0
        self.timed_out = False

    def run(self) -> None:
        start = time.monotonic()
        while not self.stop.is_set():
            if self.interval > 0:
                total = sum(pss_bytes(p) for p in tree_of(self.pid))
                self.peak = max(self.peak, total)
            if time.monotonic() - start > self.timeout:
                self.timed_out = True
                try:
                    os.killpg(self.pid, signal.SIGKILL)
                except OSError:
                    pass
                return
            self.stop.wait(self.interval if self.interval > 0 else 0.05)


@dataclass
class Sample:
    wall: float
    cpu: float
    maxrss: int  # bytes, largest single process of the tree (wait4)
    tree_pss: int  # bytes, peak of the sampled PSS sum over the live tree; 0 = no sample
    stragglers: int
    status: int
    stdout: str
    stderr: str
    timed_out: bool


def set_subreaper() -> bool:
    """Makes orphaned grandchildren ours, so that their CPU time is counted too."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def spawn(argv: list[str], work: Path, env: dict[str, str], out, err, args, exclude: set[int]) -> int:
    """Starts argv and returns the pid to wait for (it leads its own process group).

    ru_maxrss of a process also covers the memory image it had before its exec:
    a child forked from this Python process starts from Python's RSS (tens of MiB),
    which would hide a smaller agent. So by default the agent is forked by
    `setsid -f`, which exits at once without waiting for it: the agent starts from
    setsid's image (about 1 MiB) and, orphaned, becomes our child (we are a
    subreaper), to be waited for here. (A shell cannot do this job: it reaps a
    background child that exits before the shell does.)
    """
    if args.direct:
        proc = subprocess.Popen(
            argv, cwd=work, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True
        )
        proc.returncode = 0  # reaped with os.wait4 by the caller
        return proc.pid
    launcher = subprocess.Popen(
        [args.setsid, "-f", *argv], cwd=work, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err
    )
    _, status, _ = os.wait4(launcher.pid, 0)
    launcher.returncode = os.waitstatus_to_exitcode(status)
    if launcher.returncode != 0:
        raise RuntimeError(f"setsid -f failed with status {launcher.returncode}")
    # setsid has exited, so the agent (alive or a zombie) is our child now.
    orphans = [pid for pid in children_of(os.getpid()) if pid not in exclude]
    if len(orphans) != 1:
        raise RuntimeError(f"expected one orphan after setsid -f, found {orphans}")
    return orphans[0]


def run_once(agent: Agent, work: Path, out_dir: Path, args, exclude: set[int]) -> Sample:
    out_path = out_dir / f"{agent.name}.out"
    err_path = out_dir / f"{agent.name}.err"
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        t0 = time.perf_counter()
        pid = spawn(agent.argv, work, agent.env, out, err, args, exclude)
        sampler = Sampler(pid, args.sample_ms / 1000.0, args.timeout)
        sampler.start()
        _, status, usage = os.wait4(pid, 0)
        wall = time.perf_counter() - t0
        sampler.stop.set()
        sampler.join()
    returncode = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    maxrss = usage.ru_maxrss * 1024

    # Descendants that outlived the agent were reparented to us (subreaper): give
    # them a moment, then end them; their CPU time belongs to the run.
    stragglers = 0
    deadline = time.monotonic() + args.straggler_grace
    while True:
        left = [p for p in children_of(os.getpid()) if p not in exclude]
        if not left:
            break
        for pid in left:
            done, _, usage = os.wait4(pid, os.WNOHANG)
            if done:
                stragglers += 1
                cpu += usage.ru_utime + usage.ru_stime
                maxrss = max(maxrss, usage.ru_maxrss * 1024)
        if time.monotonic() > deadline:
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        time.sleep(0.01)

    return Sample(
        wall=wall,
        cpu=cpu,
        maxrss=maxrss,
        # A run of a few sampling intervals yields a sample or two, possibly taken
        # while the process was starting or exiting: no figure then.
        tree_pss=sampler.peak if wall >= 10 * sampler.interval else 0,
        stragglers=stragglers,
        status=returncode,
        stdout=out_path.read_text(errors="replace"),
        stderr=err_path.read_text(errors="replace"),
        timed_out=sampler.timed_out,
    )


# --------------------------------------------------------------------------- mock


class Mock:
    def __init__(self, binary: Path, tmp: Path):
        self.script = tmp / "rules.json"
        self.script.write_text(json.dumps(RULES, indent=1))
        self.log = tmp / "mock.jsonl"
        self.offset = 0
        errors = tmp / "mock.err"
        with open(errors, "wb") as err:
            self.proc = subprocess.Popen(
                [str(binary), "--script", str(self.script), "--log", str(self.log)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
            )
        line = self.proc.stdout.readline().strip() if self.proc.stdout else ""
        if not line.startswith("http://"):
            self.proc.kill()
            self.proc.wait()
            raise SystemExit(f"baton-mock did not start: {line!r} {errors.read_text()}")
        self.url = line

    def new_requests(self) -> list[dict]:
        """Requests logged since the last call (the log is read by byte offset)."""
        try:
            with open(self.log, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return []
        end = data.rfind(b"\n") + 1
        self.offset += end
        return [json.loads(line) for line in data[:end].splitlines() if line.strip()]

    def cpu_s(self) -> float:
        return cpu_ns_of(self.proc.pid) / 1e9

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def is_model_request(request: dict) -> bool:
    path = request.get("path", "").split("?")[0].rstrip("/")
    return request.get("method") == "POST" and path.endswith(MODEL_SUFFIXES)


def check(agent: Agent, sample: Sample, requests: list[dict]) -> str | None:
    """Why the run does not count, or None when it succeeded."""
    if sample.timed_out:
        return "timed out"
    if sample.status != 0:
        return f"exit status {sample.status}"
    answer = agent.final_answer(sample.stdout)
    if answer is None:
        return "no final answer in the output"
    if ANSWER_MARK not in answer:
        return f"unexpected final answer {answer!r}"
    model = [r for r in requests if is_model_request(r)]
    if len(model) != 2:
        return f"{len(model)} model requests instead of 2"
    if FILE_MARK in json.dumps(model[0].get("body")):
        return "the first request already holds the file's content"
    if FILE_MARK not in json.dumps(model[1].get("body")):
        return "the second request does not carry the tool result (the file's content)"
    return None


# --------------------------------------------------------------------------- report


def mib(n: float) -> float:
    return n / (1024 * 1024)


def summarize(samples: list[Sample]) -> dict:
    return {
        "runs": len(samples),
        "wall_s": statistics.median(s.wall for s in samples),
        "cpu_s": statistics.median(s.cpu for s in samples),
        "maxrss_mib": mib(statistics.median(s.maxrss for s in samples)),
        "maxrss_max_mib": mib(max(s.maxrss for s in samples)),
        # Runs that ended before the first sample have no PSS figure.
        "tree_pss_mib": mib(statistics.median(pss)) if (pss := [s.tree_pss for s in samples if s.tree_pss]) else None,
        "tree_pss_runs": len(pss),
        "wall_min_s": min(s.wall for s in samples),
        "wall_max_s": max(s.wall for s in samples),
        "stragglers": sum(s.stragglers for s in samples),
    }


def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def fmt_mib(n: float | None) -> str:
    return "-" if n is None else f"{n:.1f}"


def fmt_ratio(r: float | None) -> str:
    if r is None:
        return "-"
    return f"{r:.3f}" if r < 0.1 else f"{r:.2f}"


def print_table(summary: dict, refs: list[str]) -> None:
    head = f"{'agent':<16} {'runs':>4} {'wall ms':>9} {'cpu ms':>9} {'maxRSS MiB':>10} {'treePSS MiB':>11}"
    for ref in refs:
        head += f"  {'wall/' + ref:>10} {'cpu/' + ref:>10} {'rss/' + ref:>10}"
    print(head)
    print("-" * len(head))
    for name, s in summary.items():
        line = (
            f"{name:<16} {s['runs']:>4} {s['wall_s'] * 1000:>9.1f} {s['cpu_s'] * 1000:>9.1f}"
            f" {s['maxrss_mib']:>10.1f} {fmt_mib(s['tree_pss_mib']):>11}"
        )
        for ref in refs:
            r = summary[ref]
            line += (
                f"  {fmt_ratio(ratio(s['wall_s'], r['wall_s'])):>10}"
                f" {fmt_ratio(ratio(s['cpu_s'], r['cpu_s'])):>10}"
                f" {fmt_ratio(ratio(s['maxrss_mib'], r['maxrss_mib'])):>10}"
            )
        print(line)


def goal_lines(summary: dict, floor: dict) -> list[dict]:
    goals = []
    codex = summary.get("codex")
    for name, s in summary.items():
        if not name.startswith("baton"):
            continue
        checks = {
            "wall_le_3x_floor": s["wall_s"] <= 3.0 * floor["wall_s"],
            "rss_le_11_mib": s["maxrss_mib"] <= 11.0,
        }
        if codex:
            checks["wall_le_0.2x_codex"] = s["wall_s"] <= 0.2 * codex["wall_s"]
            checks["cpu_le_0.2x_codex"] = s["cpu_s"] <= 0.2 * codex["cpu_s"]
        goals.append({"agent": name, "checks": checks, "met": all(checks.values())})
    return goals


# --------------------------------------------------------------------------- main


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="measured runs per agent (default 10)")
    parser.add_argument("--warmup", type=int, default=1, help="unmeasured runs per agent first (default 1)")
    parser.add_argument(
        "--agents",
        default="baton,baton-responses,baton-anthropic,codex,pi",
        help="comma-separated subset of: baton (Chat Completions), baton-responses, baton-anthropic, codex, pi (default: all)",
    )
    parser.add_argument("--baton", default=str(BATON), help="baton binary")
    parser.add_argument("--mock", default=str(MOCK), help="baton-mock binary")
    parser.add_argument("--codex", default=str(NODE_BIN / "codex"), help="codex launcher")
    parser.add_argument("--pi", default=str(NODE_BIN / "pi"), help="pi launcher")
    parser.add_argument("--sample-ms", type=float, default=5.0, help="tree PSS sampling interval; 0 turns sampling off")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds before a run is killed")
    parser.add_argument("--straggler-grace", type=float, default=2.0, help="seconds left to descendants that outlive an agent")
    parser.add_argument(
        "--direct",
        action="store_true",
        help="start agents straight from Python (then maxRSS is at least Python's RSS; see bench/README.md)",
    )
    parser.add_argument("--setsid", default=shutil.which("setsid"), help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", help="print the results as JSON instead of a table")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (configs, outputs, mock log)")
    args = parser.parse_args()
    args.agents = [a.strip() for a in args.agents.split(",") if a.strip()]
    say = (lambda *a: print(*a, file=sys.stderr)) if args.json else print

    mock_bin = Path(args.mock)
    if not mock_bin.is_file():
        print(f"{mock_bin} is missing; build it with: {BUILD_HINT}", file=sys.stderr)
        return 2

    subreaper = set_subreaper()
    if not args.direct and not (subreaper and args.setsid):
        args.direct = True
        why = "setsid (util-linux) is missing" if subreaper else "this script cannot become a subreaper"
        say(f"{why}: agents are started straight from Python, so maxRSS is at least this script's RSS")
    tmp = Path(tempfile.mkdtemp(prefix="baton-bench-"))
    work = tmp / "work"
    work.mkdir()
    (work / "hello.txt").write_text(FILE_TEXT)
    out_dir = tmp / "out"
    out_dir.mkdir()

    mock = Mock(mock_bin, tmp)
    failed: dict[str, str] = {}
    samples: dict[str, list[Sample]] = {}
    try:
        agents, skipped = make_agents(args, mock.url, tmp, work)
        for name, reason in skipped.items():
            say(f"skipping {name}: {reason}")
        exclude = {mock.proc.pid}

        def one(agent: Agent) -> Sample | None:
            sample = run_once(agent, work, out_dir, args, exclude)
            problem = check(agent, sample, mock.new_requests())
            if problem:
                failed[agent.name] = problem
                say(f"{agent.name} failed: {problem}")
                say(f"  command: {' '.join(agent.argv)}")
                say("  stdout (end): " + sample.stdout[-1500:])
                say("  stderr (end): " + sample.stderr[-1500:])
                return None
            return sample

        true = shutil.which("true") or "/bin/true"
        floor_agent = Agent("launch-floor", [true], base_env(tmp, tmp), lambda _: None)
        # The floor is measured in the same rounds as the agents, one run before each round: a
        # shared machine's speed drifts within minutes, and a ratio to a floor measured apart
        # reads the drift.
        floor_samples = []

        for _ in range(args.warmup):
            for agent in agents:
                if agent.name not in failed:
                    one(agent)
        mock_cpu0 = mock.cpu_s()
        for _ in range(args.runs):
            floor_samples.append(run_once(floor_agent, work, out_dir, args, exclude))
            for agent in agents:
                if agent.name in failed:
                    continue
                sample = one(agent)
                if sample:
                    samples.setdefault(agent.name, []).append(sample)
        measured = sum(len(v) for v in samples.values())
        mock_cpu = mock.cpu_s() - mock_cpu0
        floor = summarize(floor_samples)
    finally:
        mock.stop()

    summary = {name: summarize(s) for name, s in samples.items() if name not in failed}
    refs = [r for r in ("codex", "pi") if r in summary]
    result = {
        "runs": args.runs,
        "warmup": args.warmup,
        "task": "two model turns: one call to the agent's file-reading tool, then a text answer",
        "method": {
            "wall": "from starting the launcher to wait4 returning for the agent, per run",
            "launcher": "python" if args.direct else "setsid -f, which forks the agent and exits (see bench/README.md)",
            "cpu": "user+sys from wait4 of the agent (its reaped descendants included), plus orphans reaped as subreaper",
            "maxrss": "ru_maxrss from wait4: the peak of the largest single process in the tree",
            "tree_pss": f"peak of the summed PSS of the live tree, sampled every {args.sample_ms} ms"
            " (may miss short peaks; none for runs shorter than 10 intervals)",
            "subreaper": subreaper,
        },
        "agents": summary,
        "notes": {a.name: a.note for a in agents if a.name in summary},
        "mock_cpu_ms_per_run": (mock_cpu / measured * 1000) if measured else None,
        "launch_floor": floor,
        "ratios": {
            ref: {
                name: {
                    "wall": ratio(s["wall_s"], summary[ref]["wall_s"]),
                    "cpu": ratio(s["cpu_s"], summary[ref]["cpu_s"]),
                    "maxrss": ratio(s["maxrss_mib"], summary[ref]["maxrss_mib"]),
                    "tree_pss": ratio(s["tree_pss_mib"], summary[ref]["tree_pss_mib"]),
                }
                for name, s in summary.items()
            }
            for ref in refs
        },
        "goals": goal_lines(summary, floor),
        "skipped": skipped,
        "failed": failed,
        "samples": {
            name: [
                {"wall_s": s.wall, "cpu_s": s.cpu, "maxrss_kib": s.maxrss // 1024, "tree_pss_kib": s.tree_pss // 1024}
                for s in runs
            ]
            for name, runs in samples.items()
        },
    }
    if args.keep:
        result["temp_dir"] = str(tmp)
    else:
        shutil.rmtree(tmp, ignore_errors=True)

    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"\n{args.runs} runs per agent after {args.warmup} warm-up, interleaved; medians.")
        print_table(summary, refs)
        print(
            f"\nlaunch floor (`true` started the same way): wall {floor['wall_s'] * 1000:.1f} ms,"
            f" cpu {floor['cpu_s'] * 1000:.1f} ms, maxRSS {floor['maxrss_mib']:.1f} MiB"
            " (one run before each round)"
        )
        for name, s in summary.items():
            print(f"{name}: wall {s['wall_s'] / floor['wall_s']:.2f}× the launch floor")
        if result["mock_cpu_ms_per_run"] is not None:
            print(f"baton-mock CPU per run (two model requests): {result['mock_cpu_ms_per_run']:.2f} ms")
        for name, s in summary.items():
            if s["stragglers"]:
                print(f"{name}: {s['stragglers']} descendants outlived the agent (their CPU time is counted)")
        for name, reason in failed.items():
            print(f"FAILED {name}: {reason}")
        for goal in result["goals"]:
            marks = ", ".join(f"{k} {'yes' if v else 'NO'}" for k, v in goal["checks"].items())
            print(f"goal for {goal['agent']}: {marks}")
        if args.keep:
            print(f"files kept in {tmp}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
