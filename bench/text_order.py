#!/usr/bin/env python3
"""Regenerates crates/baton-cli/text-order.txt: the functions a `baton agent` session runs, which
the linker places side by side at the start of the binary's code (see bench/README.md, "Session
start: the order of the code").

It runs the session of bench/agents.py (one mock model, a `read` call, an answer) against
target/release/baton and collects the functions it executes in two ways:

* `valgrind --tool=callgrind` (one run, `--callgrind`): every function executed, complete but
  under valgrind's own view of the CPU;
* `perf record -e page-faults -d` (several runs): the functions whose first instruction fetch
  faulted a page of code in — the ones still outside the ordered block, natively.

Names already in the file keep their place; new ones are appended; `--prune` first drops the
names the binary does not have. Run it, rebuild (`cargo build --release -p baton-cli`), and run
it again until it finds (almost) nothing new.
Needs perf (Debian `linux-perf`) and, with `--callgrind`, valgrind.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import agents  # noqa: E402  (the session, the mock and its rules)

ROOT = agents.ROOT
ORDER = ROOT / "crates" / "baton-cli" / "text-order.txt"


def session(baton: Path, url: str, tmp: Path) -> tuple[list[str], dict[str, str], Path]:
    work = tmp / "work"
    work.mkdir(exist_ok=True)
    (work / "hello.txt").write_text(agents.FILE_TEXT)
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    config = home / "baton.toml"
    config.write_text(f'[providers.mock]\nkind = "openai"\nbase_url = "{url}/v1"\n')
    env = agents.base_env(home, tmp) | {"BATON_CONFIG": str(config)}
    argv = [str(baton), "agent", "--json", "--model", "mock/mock-model", "--cwd", str(work), agents.PROMPT]
    return argv, env, work


def run(argv: list[str], env: dict[str, str], work: Path) -> None:
    out = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True)
    if out.returncode != 0 or agents.ANSWER not in out.stdout:
        sys.exit(f"the session failed ({out.returncode}): {out.stderr[-2000:]}")


def by_faults(argv: list[str], env: dict[str, str], work: Path, tmp: Path, runs: int) -> list[str]:
    """Functions whose instruction fetch faulted a page of the binary in."""
    names: list[str] = []
    for i in range(runs):
        data = tmp / f"faults{i}.data"
        run(["perf", "record", "-q", "-e", "page-faults", "-c", "1", "-d", "-o", str(data), *argv], env, work)
        text = subprocess.run(
            ["perf", "script", "--no-demangle", "-i", str(data), "-F", "ip,sym,addr,dso"],
            capture_output=True, text=True, check=True,
        ).stdout
        binary = f"({os.path.realpath(argv[0])})"
        for line in text.splitlines():
            fields = line.split()
            if len(fields) < 4 or not line.rstrip().endswith(binary):
                continue
            # addr [sym] ip sym (dso): an instruction fault has the same address twice.
            head = fields[:-1]
            if head.count(fields[0]) >= 2 and head[-1] != "[unknown]":
                names.append(head[-1])
    return names


def by_callgrind(argv: list[str], env: dict[str, str], work: Path, tmp: Path) -> list[str]:
    """Every function callgrind saw run (names of other objects are ignored by the linker)."""
    out = tmp / "callgrind.out"
    run(["valgrind", "--tool=callgrind", "--demangle=no", f"--callgrind-out-file={out}", *argv], env, work)
    names: list[str] = []
    for line in out.read_text().splitlines():
        m = re.match(r"^c?fn=\(\d+\) (.+)$", line)
        if m:
            names.append(m.group(1))
    return names


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=5, help="sessions under perf (default 5)")
    p.add_argument("--callgrind", action="store_true", help="also one session under callgrind (the first pass)")
    p.add_argument("--baton", default=str(ROOT / "target" / "release" / "baton"))
    p.add_argument("--mock", default=str(agents.MOCK))
    p.add_argument(
        "--prune",
        action="store_true",
        help="first drop the names the binary does not have (renamed or gone: their hash changed)",
    )
    args = p.parse_args()
    for tool in ["perf"] + (["valgrind"] if args.callgrind else []):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} is missing")
    baton = Path(args.baton).resolve()
    existing = [l.strip() for l in ORDER.read_text().splitlines()] if ORDER.exists() else []
    if args.prune:
        symbols = subprocess.run(
            ["nm", "--defined-only", "--no-demangle", str(baton)], capture_output=True, text=True, check=True
        ).stdout
        have = {fields[-1] for fields in (l.split() for l in symbols.splitlines()) if fields}
        kept = [n for n in existing if n in have]
        print(f"pruned {len(existing) - len(kept)} names the binary does not have")
        existing = kept
    known = set(existing)
    with tempfile.TemporaryDirectory(prefix="baton-order-") as t:
        tmp = Path(t)
        mock = agents.Mock(Path(args.mock), tmp)
        try:
            argv, env, work = session(baton, mock.url, tmp)
            found = by_callgrind(argv, env, work, tmp) if args.callgrind else []
            found += by_faults(argv, env, work, tmp, args.runs)
        finally:
            mock.proc.kill()
            mock.proc.wait()
    new = []
    for name in found:
        if name and name not in known:
            known.add(name)
            new.append(name)
    ORDER.write_text("".join(f"{n}\n" for n in existing + new if n))
    print(f"{len(new)} new functions; {len(existing) + len(new)} in {ORDER.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
