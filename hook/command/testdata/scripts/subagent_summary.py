#!/usr/bin/env python3
# SubagentStop summariser: reads the subagent's own transcript
# (agent_transcript_path) and records what it was asked and what it
# answered.
import json
import os
import sys

data = json.load(sys.stdin)
prompt, answer, turns = None, None, 0
with open(data["agent_transcript_path"]) as f:
    for raw in f:
        entry = json.loads(raw)
        content = entry["message"]["content"]
        if entry["type"] == "user" and isinstance(content, str) and not entry.get("isMeta") and prompt is None:
            prompt = content
        if entry["type"] == "assistant":
            turns += 1
            texts = [b["text"] for b in content if b.get("type") == "text"]
            if texts:
                answer = "".join(texts)

with open(os.path.join(os.environ["CLAUDE_PROJECT_DIR"], "summaries.jsonl"), "a") as log:
    log.write(json.dumps({
        "agent_id": data["agent_id"],
        "agent_type": data["agent_type"],
        "session_id": data["session_id"],
        "prompt": prompt,
        "answer": answer,
        "assistant_turns": turns,
        "sidechain": data["agent_transcript_path"] != data["transcript_path"],
    }) + "\n")
