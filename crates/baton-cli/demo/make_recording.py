#!/usr/bin/env python3
"""Writes the recording `baton demo` replays: one cassette per dispatch of a BUILD workflow
(`<phase>-<attempt>.json`) in which the reviewer finds a bug and one remediation fixes it.

The cassettes hold the model's side only; the tools they call (write, bash) run for real when
the demo replays them, on the project in `project/`. Run it from this folder after changing a
turn, then run `cargo nextest run -p baton-cli --test demo_e2e`.
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "recording")

TEST_V1 = """#!/bin/sh
# test.sh: checks greet.sh; exits 1 on the first failure.
check() { [ "$(sh greet.sh "$@")" = "$EXPECT" ] || { echo "FAIL: greet.sh $*: got '$(sh greet.sh "$@")', want '$EXPECT'"; exit 1; }; }
EXPECT="hello, ada" check ada
EXPECT="HELLO, ADA" check --shout ada
echo "ok: all greetings match"
"""

TEST_V2 = TEST_V1.replace(
    'EXPECT="HELLO, ADA" check --shout ada\n',
    'EXPECT="HELLO, ADA" check --shout ada\nEXPECT="HELLO, ADA" check ada --shout\n',
)

GREET_V1 = """#!/bin/sh
# greet.sh [--shout] NAME: prints a greeting, in capitals with --shout.
shout=no
if [ "$1" = "--shout" ]; then shout=yes; shift; fi
name="${1:-world}"
greeting="hello, $name"
if [ "$shout" = yes ]; then greeting=$(echo "$greeting" | tr '[:lower:]' '[:upper:]'); fi
echo "$greeting"
"""

GREET_V2 = """#!/bin/sh
# greet.sh [--shout] NAME: prints a greeting, in capitals with --shout (before or after NAME).
shout=no
name=world
for arg in "$@"; do
  case "$arg" in
    --shout) shout=yes ;;
    *) name="$arg" ;;
  esac
done
greeting="hello, $name"
if [ "$shout" = yes ]; then greeting=$(echo "$greeting" | tr '[:lower:]' '[:upper:]'); fi
echo "$greeting"
"""

calls = 0


def tool(name, args, text=None):
    """A turn that calls one tool (after an optional sentence)."""
    global calls
    calls += 1
    events = []
    if text:
        events.append({"type": "text_delta", "text": text})
    events += [
        {"type": "tool_call_start", "index": 0, "id": f"call_{calls}", "name": name},
        {"type": "tool_call_delta", "index": 0, "arguments": json.dumps(args)},
        {"type": "tool_call_end", "index": 0},
        {"type": "usage", "usage": {"input_tokens": 1800 + 40 * calls, "cached_input_tokens": 0, "output_tokens": 120}},
        {"type": "stop", "reason": "tool_use"},
    ]
    return {"events": events}


def answer(text):
    """The final turn: the agent's answer, ending with its contract."""
    chunks = [text[i : i + 400] for i in range(0, len(text), 400)]
    events = [{"type": "text_delta", "text": c} for c in chunks]
    events += [
        {"type": "usage", "usage": {"input_tokens": 2600, "cached_input_tokens": 0, "output_tokens": 420}},
        {"type": "stop", "reason": "end_turn"},
    ]
    return {"events": events}


def builder_contract(scenarios, note):
    rows = "".join(
        f"  - name: {n}\n    command: sh test.sh\n    expected: \"exit 0, ok: all greetings match\"\n    actual: \"exit 0, ok: all greetings match\"\n    exit_code: 0\n    status: PASS\n"
        for n in scenarios
    )
    return f"""{note}

### Router Contract (MACHINE-READABLE)
```yaml
STATUS: PASS
CONFIDENCE: 90
PHASE_ID: phase-1
PHASE_STATUS: completed
PHASE_EXIT_READY: true
CHECKPOINT_TYPE: none
PROOF_STATUS: passed
BUILD_PREFLIGHT_EMITTED: true
INPUTS: [greet.sh, test.sh]
EXPECTED_ARTIFACTS: [greet.sh, test.sh]
TDD_RED_EXIT: 1
TDD_RED_REASON_KIND: behavioral
TDD_RED_REASON: the new greeting check failed before greet.sh was changed
TDD_GREEN_EXIT: 0
TEST_SEAMS: [test.sh]
SEAM_GATE_STATUS: confirmed
SCENARIOS:
{rows}ASSUMPTIONS: []
DECISIONS: []
BLOCKED_ITEMS: []
SKIPPED_ITEMS: []
SCOPE_INCREASES: []
BLOCKING: false
NEXT_ACTION: review
REMEDIATION_NEEDED: false
REQUIRES_REMEDIATION: false
REMEDIATION_REASON: null
MEMORY_NOTES: null
```
"""


HUNT_CLEAN = """CONTRACT {"s":"CLEAN","b":false,"cr":0}
## Error Handling Audit: Clean

### Critical Issues
- none

### High Issues
- none

### Medium Issues
- none

### Minor Issues
- none

SCOPE: greet.sh, test.sh
FILES_SCANNED: 2
ERROR_HANDLING_SITES_INSPECTED: 3
REMEDIATION_NEEDED: false
REMEDIATION_SCOPE_REQUESTED: N/A
"""

dispatches = {
    "build-implement-1": [
        tool("write", {"path": "test.sh", "content": TEST_V1}, "First a failing check for --shout."),
        tool("bash", {"command": "sh test.sh"}),
        tool("write", {"path": "greet.sh", "content": GREET_V1}, "RED as expected; now the flag."),
        tool("bash", {"command": "sh test.sh"}),
        answer(builder_contract(["shout before the name"], "greet.sh takes --shout; test.sh checks it.")),
    ],
    "build-review-1": [
        tool("bash", {"command": "git diff"}),
        answer("""CONTRACT {"s":"CHANGES_REQUESTED","b":true,"cr":1}
## Review: Changes Requested

### Critical Issues
- [90] greet.sh:4 `--shout` is only seen as the first argument: `sh greet.sh ada --shout` prints "hello, --shout" instead of "HELLO, ADA"

### High Issues
- none

### Medium Issues
- none

### Minor Issues
- none

REMEDIATION_NEEDED: true
REMEDIATION_REASON: --shout after the name is taken as the name
REMEDIATION_SCOPE_REQUESTED: ALL_ISSUES
"""),
    ],
    "build-hunt-1": [answer(HUNT_CLEAN)],
    "build-implement-2": [
        tool("write", {"path": "test.sh", "content": TEST_V2}, "A check for the flag after the name first."),
        tool("bash", {"command": "sh test.sh"}),
        tool("write", {"path": "greet.sh", "content": GREET_V2}, "It fails as reported; read every argument."),
        tool("bash", {"command": "sh test.sh"}),
        answer(builder_contract(["shout before the name", "shout after the name"], "--shout is recognised in any position; test.sh covers both.")),
    ],
    "re-review-1": [
        tool("bash", {"command": "git diff"}),
        answer("""CONTRACT {"s":"APPROVE","b":false,"cr":0}
## Review: Approve

### Critical Issues
- none

### High Issues
- none

### Medium Issues
- none

### Minor Issues
- none

### Checked
- greet.sh:5 every argument is read, so the flag works before or after the name
- greet.sh:11 the greeting is upper-cased only with --shout
- test.sh:6 the reported case is now a check

REMEDIATION_NEEDED: false
REMEDIATION_SCOPE_REQUESTED: N/A
"""),
    ],
    "re-hunt-1": [answer(HUNT_CLEAN)],
    "build-verify-1": [
        tool("bash", {"command": "sh test.sh"}),
        answer("""CONTRACT {"s":"PASS","b":false,"cr":0}
## Verification: PASS

### Router Contract
```yaml
SCENARIOS_TOTAL: 2
SCENARIOS_PASSED: 2
SCENARIOS_FAILED: 0
SCENARIO_ROWS:
  - name: every greeting check passes
    command: sh test.sh
    expected: exit 0
    actual: "exit 0, ok: all greetings match"
    exit_code: 0
    status: PASS
  - name: shout after the name
    command: 'test "$(sh greet.sh ada --shout)" = "HELLO, ADA"'
    expected: exit 0
    actual: exit 0
    exit_code: 0
    status: PASS
EVIDENCE:
  scenarios:
    - "every greeting check passes | sh test.sh -> exit 0"
    - "shout after the name | greet.sh ada --shout -> HELLO, ADA"
REMEDIATION_NEEDED: false
REVERT_RECOMMENDED: false
```
"""),
    ],
    "build-doc-sync-1": [
        answer("""The usage line at the top of greet.sh already documents --shout; there is no other documentation.

### Router Contract (MACHINE-READABLE)
```yaml
STATUS: SKIPPED
IMPACT_LEVEL: local
DOC_LAYERS_EVALUATED: [script usage comment]
DOC_FILES_UPDATED: []
DOC_FILES_SKIPPED: [greet.sh]
SKIP_REASON: the script's usage comment already documents --shout
AUDIT_DOCS_CREATED: []
AUDIT_DOCS_UPDATED: []
MEMORY_NOTES: null
```
"""),
    ],
}

os.makedirs(OUT, exist_ok=True)
for name, turns in dispatches.items():
    with open(os.path.join(OUT, f"{name}.json"), "w") as f:
        json.dump({"version": 1, "turns": turns}, f, indent=1)
        f.write("\n")
print(f"wrote {len(dispatches)} cassettes to {OUT}")
