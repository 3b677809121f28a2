#!/usr/bin/env python3
# PreToolUse guard on Bash, in the style of the published Claude Code
# examples: refuse destructive commands. Exit 2 blocks the call; stderr is
# the reason the model reads.
import json
import os
import re
import sys

data = json.load(sys.stdin)
command = data.get("tool_input", {}).get("command", "")
blocked = data.get("tool_name") == "Bash" and re.search(r"\brm\s+-(\w*r\w*f|\w*f\w*r)\b", command)

with open(os.path.join(os.environ["CLAUDE_PROJECT_DIR"], "guard.jsonl"), "a") as log:
    log.write(json.dumps({
        "tool_name": data.get("tool_name"),
        "command": command,
        "agent_type": data.get("agent_type"),
        "session_id": data.get("session_id"),
        "blocked": bool(blocked),
    }) + "\n")

if blocked:
    print("Blocked: rm -rf is not allowed here; delete files one by one.", file=sys.stderr)
    sys.exit(2)
sys.exit(0)
