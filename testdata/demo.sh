#!/usr/bin/env bash
# `make demo`: the main job end to end, in a throw-away state directory.
# One agentctl binary serves Auggie (which appends _<server> to tool names)
# and Claude Code (which prepends mcp__<server>__) so that each model sees
# ask_user_question_agentctl exactly once. The MCP client is the official
# TypeScript SDK (testdata/tsclient), started from the configuration file
# agentctl wrote for the client.
set -euo pipefail
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export AGENTCTL_STATE_DIR=$work/state XDG_CONFIG_HOME=$work/config
if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then
  say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
else
  say() { printf '\n== %s\n' "$*"; }
fi

say "agentctl agents list"
"$bin" agents list

for agent in auggie claude-code; do
  say "agentctl instance create --agent $agent --name demo-$agent"
  id=$("$bin" instance create --agent "$agent" --name "demo-$agent" --workspace "$work" 2>/dev/null)
  cfg=$("$bin" instance show "$id" --jq .mcp_config_path)
  echo "instance $id; client config $cfg:"
  cat "$cfg"

  say "$agent's client starts the endpoint from that file; tools/list, then ask_user_question"
  # Answer the question from another process as soon as it is asked.
  ( for _ in $(seq 1 100); do
      if "$bin" instance answer "$id" "staging" >/dev/null 2>&1; then exit 0; fi
      sleep 0.1
    done ) &
  answerer=$!
  plan=$(node -e '
    const fs = require("fs");
    const [cfgPath, agent] = process.argv.slice(1);
    const entry = JSON.parse(fs.readFileSync(cfgPath, "utf8")).mcpServers.agentctl;
    const sfx = agent === "auggie" ? "" : "_agentctl";
    console.log(JSON.stringify({command: entry.command, args: entry.args, steps: [
      {op: "list"},
      {op: "call", name: "ask_user_question" + sfx, arguments: {question: "Which database?", choices: ["staging", "prod"]}},
      {op: "call", name: "report_progress" + sfx, arguments: {message: "demo done", status: "done", percent: 100}},
    ]}));' "$cfg" "$agent")
  (cd "$work" && node "$root/testdata/tsclient/client.mjs" "$plan" 2>/dev/null) > "$work/out.json"
  wait "$answerer" || true
  template=$("$bin" agents show "$agent" --jq .capabilities.tool_names.template)
  node -e '
    const fs = require("fs");
    const [file, template] = process.argv.slice(1);
    const out = JSON.parse(fs.readFileSync(file, "utf8"));
    console.log("tools/list sent   ->  the model sees (template " + template + ")");
    for (const t of out.results[0].tools) {
      const seen = template.replace("{server}", "agentctl").replace("{tool}", t.name);
      console.log("  " + t.name.padEnd(30) + "->  " + seen);
    }
    console.log("ask_user_question answered: " + JSON.stringify(out.results[1].result.structuredContent));
    console.log("report_progress:            " + JSON.stringify(out.results[2].result.structuredContent));
  ' "$work/out.json" "$template"
  say "agentctl instance events demo-$agent"
  "$bin" instance events "demo-$agent"
done

say "agentctl instance list"
"$bin" instance list
