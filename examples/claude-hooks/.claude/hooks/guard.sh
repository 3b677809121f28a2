#!/bin/sh
# PreToolUse: refuse delegations whose input mentions deleting something.
# The payload is one JSON object on stdin; exit 2 blocks with stderr as the
# reason, exit 0 with JSON on stdout decides explicitly.
input=$(cat)
if printf '%s' "$input" | grep -qi '"tool_input":{[^}]*delete'; then
  echo "Delegations that delete things need a human; ask the user instead." >&2
  exit 2
fi
printf '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}\n'
