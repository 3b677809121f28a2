#!/usr/bin/env python3
# PostToolUse logger for Edit|Write: one line per file changed.
import json
import os
import sys

data = json.load(sys.stdin)
with open(os.path.join(os.environ["CLAUDE_PROJECT_DIR"], "edits.log"), "a") as log:
    log.write("%s %s %s\n" % (data["tool_name"], data["tool_input"].get("file_path"), data.get("agent_type", "-")))
