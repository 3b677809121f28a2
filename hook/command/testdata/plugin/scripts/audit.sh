#!/bin/sh
# Logs each delegation with the plugin root it ran from.
input=$(cat)
agent=$(printf '%s' "$input" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["tool_name"], d["tool_input"]["subagent_type"])')
echo "$CLAUDE_PLUGIN_ROOT $agent" >> "$CLAUDE_PROJECT_DIR/plugin.log"
