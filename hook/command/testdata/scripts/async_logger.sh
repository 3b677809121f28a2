#!/bin/sh
# Async PostToolUse logger ("async": true): it takes its time (here: until
# the test lets it go) and the run does not wait for it.
input=$(cat)
i=0
while [ ! -f "$CLAUDE_PROJECT_DIR/release" ] && [ $i -lt 600 ]; do
  sleep 0.05
  i=$((i + 1))
done
printf '%s\n' "$input" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["hook_event_name"], d["tool_name"])' >> "$CLAUDE_PROJECT_DIR/async.log"
