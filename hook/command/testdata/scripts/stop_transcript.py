#!/usr/bin/env python3
# Stop hook that reads the transcript, as stop-loop scripts do: it finds the
# last assistant message and counts the tool uses, and blocks once (until
# stop_hook_active) with a reason that makes the agent go on.
import json
import os
import sys

data = json.load(sys.stdin)
last_text, tool_uses, tools = None, 0, []
with open(data["transcript_path"]) as f:
    for raw in f:
        entry = json.loads(raw)
        if entry.get("type") != "assistant":
            continue
        for block in entry["message"]["content"]:
            if block.get("type") == "text":
                last_text = block["text"]
            elif block.get("type") == "tool_use":
                tool_uses += 1
                tools.append(block["name"])

with open(os.path.join(os.environ["CLAUDE_PROJECT_DIR"], "stop.jsonl"), "a") as log:
    log.write(json.dumps({
        "stop_hook_active": data["stop_hook_active"],
        "last_text": last_text,
        "last_assistant_message": data.get("last_assistant_message"),
        "tool_uses": tool_uses,
        "tools": tools,
    }) + "\n")

if data["stop_hook_active"]:
    sys.exit(0)
print(json.dumps({"decision": "block", "reason": "Before you stop: confirm the %d tool uses." % tool_uses}))
