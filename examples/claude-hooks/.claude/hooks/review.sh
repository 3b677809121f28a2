#!/bin/sh
# SubagentStop: the first time the helper stops, ask it for the risks.
# stop_hook_active is true when this hook already made it continue.
input=$(cat)
if printf '%s' "$input" | grep -q '"stop_hook_active":true'; then
  exit 0
fi
printf '{"decision":"block","reason":"Add one sentence on the risks."}\n'
