// Issue 34's "done when" over ACP (nested): a manifest's parallel team of
// a native agent and the real `opencode acp` (offline:
// ../lib/opencode-team.js), prompted through `agentpool serve acp` with
// the official client library's unstable API and the subagents
// capability: both members are spawn tool calls on the root session,
// closed with their answers, and child sessions (subagent_update running,
// then idle) whose own updates show their content: opencode's thought,
// its read call with the input and file it named, its streamed answer.
// agentpool is here both an ACP agent (to the test) and an ACP client (of
// opencode). No opencode process outlives the server.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { Readable, Writable } from "node:stream";
import * as unstable from "@agentclientprotocol/sdk/unstable";

import {
  NATIVE_ANSWER, NOTES_FILE, NOTES_TEXT, OPENCODE_ANSWER, TEST_TIMEOUT_MS, THOUGHT, opencodeBinary, opencodeTeam,
} from "../lib/opencode-team.js";

const BIN = process.env.AGENTPOOL_BIN;
const { skip } = opencodeBinary();
const SPAWN = "spawn:";

const text = (block) => (block && block.type === "text" ? block.text : "");

test("a team of a native agent and the real opencode: both children, nested, with their content", { skip, timeout: TEST_TIMEOUT_MS }, async (t) => {
  assert.ok(BIN, "set AGENTPOOL_BIN to the agentpool binary");
  const team = await opencodeTeam();
  t.after(() => team.close());
  const child = spawn(BIN, ["serve", "acp", "-c", team.manifest, "--db", ":memory:"], { stdio: ["pipe", "pipe", "pipe"], cwd: team.dir });
  let stderr = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (d) => (stderr += d));
  const exited = once(child, "exit");
  t.after(() => child.kill("SIGKILL")); // after a failed assertion; a no-op once it exited
  const stream = unstable.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

  const updates = [];
  const app = unstable
    .client({ name: "agentpool-acp-test" })
    .onNotification(unstable.methods.client.session.update, ({ params }) => {
      updates.push(params);
    });
  let root;
  await app.connectWith(stream, async (ctx) => {
    const init = await ctx.request(unstable.methods.agent.initialize, {
      protocolVersion: unstable.PROTOCOL_VERSION,
      clientCapabilities: { subagents: {} },
      clientInfo: { name: "agentpool-acp-test", version: "1.0.0" },
    });
    assert.equal(init.protocolVersion, 1);
    const s = await ctx.request(unstable.methods.agent.session.new, { cwd: team.dir, mcpServers: [] });
    root = s.sessionId;
    assert.equal(s.modes.currentModeId, "pair", "the manifest's default agent, the team");
    const res = await ctx.request(unstable.methods.agent.session.prompt, {
      sessionId: root,
      prompt: [{ type: "text", text: "Say hello." }],
    });
    assert.equal(res.stopReason, "end_turn");
    // Let the SDK dispatch the notifications that came with the answer.
    await new Promise((r) => setTimeout(r, 20));
  });

  // The spawn tool calls on the root: one per member, completed with its
  // answer.
  const spawns = new Map(); // child session -> {title, final, status}
  for (const { sessionId, update } of updates) {
    const id = update.toolCallId;
    if (sessionId !== root || typeof id !== "string" || !id.startsWith(SPAWN)) continue;
    const c = id.slice(SPAWN.length);
    if (update.sessionUpdate === "tool_call") spawns.set(c, { title: update.title });
    else if (update.status) Object.assign(spawns.get(c), { status: update.status, final: update.content?.map((x) => text(x.content)).join("\n") });
  }
  const byTitle = new Map([...spawns].map(([c, s]) => [s.title, { ...s, id: c }]));
  assert.deepEqual([...byTitle.keys()].sort(), ["Spawned: native", "Spawned: opencode"]);
  const oc = byTitle.get("Spawned: opencode");
  const native = byTitle.get("Spawned: native");
  assert.deepEqual([oc.status, oc.final], ["completed", OPENCODE_ANSWER]);
  assert.deepEqual([native.status, native.final], ["completed", NATIVE_ANSWER]);

  // Each child: subagent_update running on the root, its own updates,
  // then idle with end_turn; nothing of it after.
  for (const c of [oc.id, native.id]) {
    const running = updates.findIndex((u) => u.update.sessionUpdate === "subagent_update" && u.update.sessionId === c && u.update.state?.state === "running");
    const idle = updates.findIndex((u) => u.update.sessionUpdate === "subagent_update" && u.update.sessionId === c && u.update.state?.state === "idle");
    assert.ok(running >= 0 && idle > running, `${c}: running, then idle`);
    assert.equal(updates[running].sessionId, root);
    assert.equal(updates[idle].update.state.stopReason, "end_turn");
    const own = updates.map((u, i) => [u, i]).filter(([u]) => u.sessionId === c);
    assert.ok(own.length > 0, `${c} has updates of its own`);
    assert.ok(own.every(([, i]) => i > running && i < idle), `${c}: its updates between running and idle`);
  }
  const own = (c, kind) => updates.filter((u) => u.sessionId === c && u.update.sessionUpdate === kind).map((u) => u.update);
  const chunks = own(oc.id, "agent_message_chunk");
  assert.equal(chunks.map((u) => text(u.content)).join(""), OPENCODE_ANSWER);
  assert.ok(chunks.length > 1, "opencode's answer streamed in several chunks");
  assert.equal(own(oc.id, "agent_thought_chunk").map((u) => text(u.content)).join(""), THOUGHT);
  const [call] = own(oc.id, "tool_call");
  assert.equal(call?.kind, "read", "opencode's read call in its session");
  const end = own(oc.id, "tool_call_update").find((u) => u.toolCallId === call.toolCallId && u.status === "completed");
  assert.ok(end, "the read call completed");
  const titles = own(oc.id, "tool_call_update").filter((u) => u.toolCallId === call.toolCallId && u.title).map((u) => u.title);
  assert.match(titles.at(-1) ?? "", /\/notes\.md$/, `opencode's last title of the call names the file: ${titles}`);
  assert.deepEqual(end.rawInput, { filePath: NOTES_FILE }, "with the input opencode named once the call ran");
  assert.deepEqual(end.locations, [{ path: NOTES_FILE }]);
  assert.equal(end.content.map((x) => text(x.content)).join(""), NOTES_TEXT.trim());
  assert.equal(own(native.id, "agent_message_chunk").map((u) => text(u.content)).join(""), NATIVE_ANSWER);

  child.stdin.end();
  const [code] = await exited;
  assert.equal(code, 0, `agentpool exited with ${code}:\n${stderr}`);
  assert.deepEqual(team.leftovers(), [], "no opencode process outlived the server");
});
