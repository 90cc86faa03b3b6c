#!/usr/bin/env python3
"""Flow benchmark: `baton flow start` integrating 8 units versus a plain shell script doing the same
git commands in sequence.

Each unit's implementer is a `command`-backend script that sleeps (0.20 s to 0.48 s, a different
time per unit) and then commits one file. Validation is `test -f <id>.txt`; there is no review.

Printed:
- Flow's wall time, the implementer phase (first implementer started .. all settled, timed on the
  JSON event stream as it arrives) next to the slowest implementer and the sum of all implementers
  (overlap: the phase should be close to the slowest, far from the sum);
- two scripts, without sleeps: a minimal one (worktree add, commit, rebase, validate,
  merge --ff-only, worktree remove, branch -d) and one running exactly the git commands Flow runs,
  in its order (its checks of Main, the worktree and ancestry included);
- orchestration overhead = Flow wall - slowest implementer sleep, and its ratio to the second
  script's time (goal <= 1.0), and to the minimal one.

Usage: bench/flow.py [--baton PATH] [--runs N]
(default binary: target/release/baton, else target/debug/baton; build it with
`cargo build --release -p baton-cli`).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
UNITS = 8
SLEEPS = [0.20 + 0.04 * i for i in range(UNITS)]  # 0.20 .. 0.48 s

IMPLEMENTER = """\
d={scripts}
sleep "$(cat "$d/sleep-$BATON_FLOW_UNIT")"
echo "$BATON_FLOW_UNIT" > "$BATON_FLOW_UNIT.txt"
git add "$BATON_FLOW_UNIT.txt"
git commit -q -m "unit $BATON_FLOW_UNIT"
"""

SCRIPT = r"""
set -e
cd "$REPO"
for u in $UNITS; do
  git worktree add -q -b "baton/script-$u" "$WT/$u" HEAD
done
for u in $UNITS; do
  (cd "$WT/$u" && echo "$u" > "$u.txt" && git add "$u.txt" && git commit -q -m "unit $u")
done
first=1
for u in $UNITS; do
  if [ $first = 0 ]; then git -C "$WT/$u" rebase -q main; fi
  first=0
  (cd "$WT/$u" && test -f "$u.txt")
  git merge -q --ff-only "$(git -C "$WT/$u" rev-parse HEAD)"
  git worktree remove "$WT/$u"
  git branch -q -d "baton/script-$u"
done
"""


# The git commands Flow itself runs, in its order, without Flow: its preconditions, setup, and per
# unit the step-1 check of Main, the worktree's status, the ancestry check, the rebase, reading the
# new tip and its commits, validation, the worktree's untracked files, Main again right before the
# merge, the merge and the cleanup. Orchestration overhead is measured against this, so the ratio
# is what Flow costs beyond the git work its contract requires.
SCRIPT_FLOW_COMMANDS = r"""
set -e
cd "$REPO"
git rev-parse --show-toplevel >/dev/null
git rev-parse --git-common-dir >/dev/null
git var GIT_COMMITTER_IDENT >/dev/null
git status --porcelain=v2 --branch --untracked-files=normal >/dev/null
for u in $UNITS; do
  git worktree add -q -b "baton/script-$u" "$WT/$u" HEAD
done
for u in $UNITS; do
  (cd "$WT/$u" && echo "$u" > "$u.txt" && git add "$u.txt" && git commit -q -m "unit $u")
done
base=$(git rev-parse HEAD)
first=1
for u in $UNITS; do
  main=$(git rev-parse HEAD)
  if [ $first = 1 ]; then git status --porcelain=v2 --branch --untracked-files=normal >/dev/null; fi
  git -C "$WT/$u" status --porcelain=v2 --branch --untracked-files=normal >/dev/null
  tip=$(git -C "$WT/$u" rev-parse HEAD)
  if [ $first = 0 ]; then
    git -C "$WT/$u" merge-base --is-ancestor "$base" "$tip"
    git -C "$WT/$u" rebase -q --onto "$main" "$base"
  fi
  first=0
  git -C "$WT/$u" rev-parse --verify -q 'HEAD^{commit}' >/dev/null
  tip=$(git -C "$WT/$u" rev-parse HEAD)
  git -C "$WT/$u" rev-list --reverse "$main..$tip" >/dev/null
  (cd "$WT/$u" && test -f "$u.txt")
  git -C "$WT/$u" status --porcelain=v2 --branch --untracked-files=normal >/dev/null
  git status --porcelain=v2 --branch --untracked-files=normal >/dev/null
  git -c merge.autoStash=false merge -q --ff-only "$tip"
  git worktree remove "$WT/$u"
  git branch -q -d "baton/script-$u"
done
"""


def env_for(tmp: Path) -> dict:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp / "home"),
        "XDG_CONFIG_HOME": str(tmp / "config"),
        "XDG_STATE_HOME": str(tmp / "state"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_AUTHOR_NAME": "Bench",
        "GIT_AUTHOR_EMAIL": "bench@example.invalid",
        "GIT_COMMITTER_NAME": "Bench",
        "GIT_COMMITTER_EMAIL": "bench@example.invalid",
        "BATON_MAX_SUBAGENTS": str(UNITS),
    }
    for d in ("home", "config", "state"):
        (tmp / d).mkdir(parents=True, exist_ok=True)
    return env


def git(repo: Path, env: dict, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True
    ).stdout


def make_repo(tmp: Path, env: dict) -> Path:
    repo = tmp / "repo"
    scripts = tmp / "scripts"
    repo.mkdir()
    scripts.mkdir()
    git(repo, env, "init", "-q", "-b", "main")
    (repo / "README").write_text("bench\n")
    roles = repo / ".baton" / "roles"
    roles.mkdir(parents=True)
    (scripts / "impl.sh").write_text(IMPLEMENTER.format(scripts=scripts))
    for i, s in enumerate(SLEEPS):
        (scripts / f"sleep-u{i}").write_text(f"{s:.2f}\n")
    (roles / "implementer.md").write_text(
        "---\nname: implementer\ndescription: Bench implementer.\ntools: []\n"
        f"backend: command\ncommand: [sh, {scripts / 'impl.sh'}]\n---\nSleep, then commit one file.\n"
    )
    git(repo, env, "add", "-A")
    git(repo, env, "commit", "-q", "-m", "initial")
    return repo


def run_flow(baton: Path, tmp: Path) -> dict:
    env = env_for(tmp)
    repo = make_repo(tmp, env)
    # The implementer role runs a `command`: baton runs a project's command roles only once the
    # user trusted the project (`baton trust`), as a user of this repository would.
    subprocess.run([str(baton), "trust"], cwd=repo, env=env, check=True, capture_output=True)
    units = [
        {
            "id": f"u{i}",
            "name": f"Unit {i}",
            "task": f"Add u{i}.txt",
            "validation": [{"command": "test", "args": ["-f", f"u{i}.txt"]}],
        }
        for i in range(UNITS)
    ]
    units_file = tmp / "units.json"
    units_file.write_text(json.dumps({"units": units}))
    seen = {}
    durations = []
    t0 = time.monotonic()
    p = subprocess.Popen(
        [str(baton), "flow", "start", str(units_file), "--json"],
        cwd=repo,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    report = None
    assert p.stdout is not None
    for line in p.stdout:
        now = time.monotonic() - t0
        ev = json.loads(line)
        kind = ev.get("type")
        seen.setdefault(kind, now)
        if kind == "unit.implementer_finished":
            durations.append(ev["result"]["duration_ms"] / 1000.0)
        if kind == "flow.report":
            report = ev["flow"]
    stderr = p.stderr.read() if p.stderr else ""
    code = p.wait()
    wall = time.monotonic() - t0
    if code != 0 or report is None or report["phase"] != "completed":
        sys.exit(f"Flow did not complete (exit {code}):\n{stderr}")
    subjects = git(repo, env, "log", "--format=%s", "main").split("\n")
    if len([s for s in subjects if s.startswith("unit ")]) != UNITS:
        sys.exit(f"unexpected history: {subjects}")
    return {
        "wall": wall,
        "impl_phase": seen["flow.implementers_settled"] - seen["unit.implementer_started"],
        "impl_sum": sum(durations),
        "impl_max": max(durations),
    }


def run_script(tmp: Path, script: str = SCRIPT) -> float:
    env = env_for(tmp)
    repo = make_repo(tmp, env)
    wt = tmp / "script-worktrees"
    wt.mkdir()
    env = dict(env, REPO=str(repo), WT=str(wt), UNITS=" ".join(f"u{i}" for i in range(UNITS)))
    t0 = time.monotonic()
    subprocess.run(["sh", "-c", script], env=env, check=True)
    return time.monotonic() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baton", type=Path)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    baton = args.baton
    if baton is None:
        for c in (ROOT / "target/release/baton", ROOT / "target/debug/baton"):
            if c.exists():
                baton = c
                break
    if baton is None or not baton.exists():
        sys.exit("no baton binary: build one with `cargo build --release -p baton-cli` or pass --baton")

    flows, scripts, mirrors = [], [], []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="baton-flow-bench-") as t:
            flows.append(run_flow(baton, Path(t)))
        with tempfile.TemporaryDirectory(prefix="baton-flow-bench-") as t:
            scripts.append(run_script(Path(t)))
        with tempfile.TemporaryDirectory(prefix="baton-flow-bench-") as t:
            mirrors.append(run_script(Path(t), SCRIPT_FLOW_COMMANDS))

    med = lambda xs: statistics.median(xs)
    wall = med([f["wall"] for f in flows])
    phase = med([f["impl_phase"] for f in flows])
    isum = med([f["impl_sum"] for f in flows])
    imax = med([f["impl_max"] for f in flows])
    git_time = med(scripts)
    mirror_time = med(mirrors)
    slowest = max(SLEEPS)
    orchestration = wall - slowest
    print(f"baton: {baton}")
    print(f"{UNITS} units, implementer sleeps {SLEEPS[0]:.2f}..{slowest:.2f} s (sum {sum(SLEEPS):.2f} s); median of {args.runs} runs")
    print(f"Flow wall time                     {wall:7.3f} s")
    print(f"  implementer phase                {phase:7.3f} s   (slowest implementer {imax:.3f} s, sum of all {isum:.3f} s)")
    print(f"  overlap: phase / slowest         {phase / imax:7.2f}x   phase / sum {phase / isum:.2f}x")
    print(f"Script, minimal git commands       {git_time:7.3f} s   (add, commit, rebase, merge, remove, branch -d; with the sleeps in sequence {git_time + sum(SLEEPS):.3f} s)")
    print(f"Script, Flow's own git commands    {mirror_time:7.3f} s   (the same commands Flow runs, in its order)")
    print(f"Orchestration overhead             {orchestration:7.3f} s   (Flow wall - slowest sleep)")
    ratio = orchestration / mirror_time
    print(f"  ratio to Flow's git commands     {ratio:7.2f}x   (goal <= 1.00: {'met' if ratio <= 1.0 else 'NOT met'})")
    print(f"  ratio to the minimal script      {orchestration / git_time:7.2f}x   (the checks Flow's contract adds are in here)")


if __name__ == "__main__":
    main()
