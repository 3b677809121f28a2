#!/bin/sh
# Exec form ("args"): run without a shell, with its arguments as given.
cat > /dev/null
echo "context.sh $1 $2 env=$CLAUDE_PLUGIN_ROOT" >> "$CLAUDE_PROJECT_DIR/plugin.log"
echo "PLUGIN CONTEXT: audits are on."
