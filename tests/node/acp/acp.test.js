// ACP tests of `agentpool serve acp` with the official client library
// (@agentclientprotocol/sdk 2.4.0): the binary is spawned and driven over
// its stdio with ndJsonStream. AGENTPOOL_BIN names the binary.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import fs from "node:fs";
import os from "node:os";
import * as acp from "@agentclientprotocol/sdk";
import * as unstable from "@agentclientprotocol/sdk/unstable";

const BIN = process.env.AGENTPOOL_BIN;
if (!BIN) {
  throw new Error("set AGENTPOOL_BIN to the agentpool binary");
}
const here = path.dirname(fileURLToPath(import.meta.url));
const fixture = (name) => path.join(here, "fixtures", name);
// isolated copies a fixture manifest into a directory of its own: an
// "always" answer is saved to .claude/settings.local.json beside the
// manifest, and must not reach the checkout (nor the next run's asks).
const isolated = (name) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentpool-acp-fixture-"));
  fs.copyFileSync(fixture(name), path.join(dir, name));
  return path.join(dir, name);
};
const SPAWN = "spawn:";

// startAgent spawns `agentpool serve acp` and returns an ACP stream over its
// stdio. Every session/update line on the wire is counted before the SDK
// validates it, so a test can check that the client dropped none.
function startAgent(sdk, manifest) {
  const child = spawn(BIN, ["serve", "acp", "-c", manifest, "--db", ":memory:"], {
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (d) => (stderr += d));
  const wire = { updates: 0, lines: 0 };
  const decoder = new TextDecoder();
  let pending = "";
  const tap = new TransformStream({
    transform(chunk, controller) {
      pending += decoder.decode(chunk, { stream: true });
      let nl;
      while ((nl = pending.indexOf("\n")) >= 0) {
        const line = pending.slice(0, nl);
        pending = pending.slice(nl + 1);
        if (!line.trim()) continue;
        wire.lines++;
        const msg = JSON.parse(line); // every line is one JSON object
        assert.equal(msg.jsonrpc, "2.0");
        if (msg.method === "session/update") wire.updates++;
      }
      controller.enqueue(chunk);
    },
  });
  const input = Readable.toWeb(child.stdout).pipeThrough(tap);
  const output = Writable.toWeb(child.stdin);
  const stream = sdk.ndJsonStream(output, input);
  const exited = once(child, "exit");
  return {
    stream,
    wire,
    stderr: () => stderr,
    // kill ends the process at once (after a failed assertion, so that the
    // test does not hang on its pipes).
    kill: () => child.kill("SIGKILL"),
    // stop ends stdin (the server exits cleanly on EOF) and waits.
    async stop() {
      child.stdin.end();
      const [code] = await exited;
      assert.equal(code, 0, `agentpool exited with ${code}:\n${stderr}`);
    },
  };
}

// settle lets the SDK finish dispatching notifications that arrived with
// the last response.
const settle = () => new Promise((r) => setTimeout(r, 20));

function text(block) {
  return block && block.type === "text" ? block.text : "";
}

// checkSpawns checks the spawn tool calls of a prompt's updates (the
// params of every session/update, in order): each child's spawn tool call
// comes before any of its content and is closed exactly once with
// completed or failed; nothing of it follows. It returns child id ->
// {status, meta, title}.
function checkSpawns(updates, root) {
  const spawns = new Map();
  for (const [i, { sessionId, update }] of updates.entries()) {
    const id = update.toolCallId;
    if (typeof id !== "string" || !id.startsWith(SPAWN)) continue;
    assert.equal(sessionId, root, `spawn tool call ${id} not on the root session`);
    const child = id.slice(SPAWN.length);
    if (update.sessionUpdate === "tool_call") {
      assert.ok(!spawns.has(child), `second spawn tool call for ${child}`);
      assert.match(update.title, /^Spawned: /);
      assert.equal(update.kind, "other");
      assert.equal(update.status, "in_progress");
      assert.ok(text(update.content?.[0]?.content), `spawn ${child}: first content block is the description`);
      const meta = update._meta?.agentpool;
      assert.equal(meta?.type, "spawn_start");
      assert.equal(meta.child_session_id, child);
      for (const k of ["parent_session_id", "spawn_mechanism", "run_mode", "source_type", "depth"]) {
        assert.ok(k in meta, `spawn _meta lacks ${k}`);
      }
      spawns.set(child, { start: i, meta, title: update.title, status: undefined });
    } else {
      assert.equal(update.sessionUpdate, "tool_call_update");
      const s = spawns.get(child);
      assert.ok(s, `update of spawn tool call ${child} (#${i}) before its tool_call`);
      assert.equal(s.status, undefined, `update of spawn tool call ${child} after it closed`);
      if (update.status === "completed" || update.status === "failed") {
        s.status = update.status;
        s.final = update.content?.map((c) => text(c.content)).join("\n");
        s.rawOutput = update.rawOutput;
        s.endMeta = update._meta?.agentpool;
      }
    }
  }
  for (const [child, s] of spawns) {
    assert.ok(s.status, `spawn tool call for ${child} never closed`);
  }
  // A grandchild's spawn tool call comes after its parent's.
  for (const [child, s] of spawns) {
    const parent = spawns.get(s.meta.parent_session_id);
    if (parent) assert.ok(parent.start < s.start, `${child} announced before its parent`);
    else assert.equal(s.meta.parent_session_id, root);
    assert.equal(s.meta.depth, parent ? parent.meta.depth + 1 : 1);
  }
  return spawns;
}

// TREE is the client capability of our extension: every child, at any
// depth, is a spawn tool call of the root session. A client without it
// (FLAT) sees one tool call per delegation, its delegating tool call.
const TREE = { _meta: { agentpool: { spawn_tool_calls: true } } };
const FLAT = {};

async function initialize(ctx, sdk, clientCapabilities = TREE) {
  const init = await ctx.request(sdk.methods.agent.initialize, {
    protocolVersion: sdk.PROTOCOL_VERSION,
    clientCapabilities,
    clientInfo: { name: "agentpool-acp-test", version: "1.0.0" },
  });
  assert.equal(init.protocolVersion, 1);
  assert.equal(init.agentCapabilities.loadSession, true);
  assert.ok(init.agentCapabilities.sessionCapabilities.list);
  assert.deepEqual(init.agentCapabilities.mcpCapabilities, { http: true, sse: true });
  assert.ok(init.agentCapabilities.sessionCapabilities.close);
  assert.deepEqual(init.authMethods, []);
  return init;
}

test("nested manifest: every child is a spawn tool call, opened before its content and closed", async () => {
  const agent = startAgent(acp, fixture("agentpool-style.yaml"));
  const updates = [];
  const app = acp
    .client({ name: "agentpool-acp-test" })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      updates.push(params);
    });
  let sessionId;
  await app.connectWith(agent.stream, async (ctx) => {
    await initialize(ctx, acp);
    const s = await ctx.request(acp.methods.agent.session.new, { cwd: here, mcpServers: [] });
    sessionId = s.sessionId;
    assert.equal(s.modes.currentModeId, "planner");
    assert.deepEqual(
      s.modes.availableModes.map((m) => m.id),
      ["planner", "searcher", "summarizer", "critic", "research_team", "review_chain"],
    );
    const res = await ctx.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "Plan the research" }],
    });
    assert.equal(res.stopReason, "end_turn");
    await settle();
    assert.equal(updates.length, agent.wire.updates, "the client dropped updates it could not validate");

    const spawns = checkSpawns(updates, sessionId);
    // research_team, its members searcher and critic, and the searcher's
    // worker summarizer (a grandchild of the team).
    assert.deepEqual(
      [...spawns.values()].map((s) => s.title).sort(),
      ["Spawned: critic", "Spawned: research_team", "Spawned: searcher", "Spawned: summarizer"],
    );
    for (const s of spawns.values()) assert.equal(s.status, "completed");
    const summarizer = [...spawns.values()].find((s) => s.title === "Spawned: summarizer");
    assert.equal(summarizer.meta.depth, 3);
    assert.match(summarizer.final, /goroutines are multiplexed/);
    const answer = updates
      .filter((u) => u.sessionId === sessionId && u.update.sessionUpdate === "agent_message_chunk")
      .map((u) => text(u.update.content))
      .join("");
    assert.equal(answer, "Plan complete.");

    // The session is listed and can be loaded: the history is replayed.
    const list = await ctx.request(acp.methods.agent.session.list, {});
    const info = list.sessions.find((x) => x.sessionId === sessionId);
    assert.ok(info, "session/list lists the session");
    assert.equal(info.cwd, here);
    assert.equal(info.title, "Plan the research");
    const before = updates.length;
    await ctx.request(acp.methods.agent.session.load, { sessionId, cwd: here, mcpServers: [] });
    await settle();
    const replayed = updates.slice(before);
    assert.equal(replayed[0].update.sessionUpdate, "user_message_chunk");
    assert.equal(text(replayed[0].update.content), "Plan the research");
    checkSpawns(replayed, sessionId);
    assert.equal(updates.length, agent.wire.updates);
  });
  await agent.stop();
});

// toolCalls folds a prompt's updates into the tool calls a client holds:
// id -> {title, statuses (in order), content (the last, as text), meta}.
// A tool_call_update of an unknown id, or after the call closed, fails.
function toolCalls(updates, root) {
  const calls = new Map();
  for (const { sessionId, update } of updates) {
    const id = update.toolCallId;
    if (update.sessionUpdate === "tool_call") {
      assert.equal(sessionId, root);
      assert.ok(!calls.has(id), `second tool_call ${id}`);
      calls.set(id, { title: update.title, statuses: [update.status], content: "", metas: [] });
    } else if (update.sessionUpdate === "tool_call_update") {
      const c = calls.get(id);
      assert.ok(c, `tool_call_update of unknown ${id}`);
      const last = c.statuses.at(-1);
      assert.ok(last !== "completed" && last !== "failed", `update of ${id} after it closed`);
      if (update.status) c.statuses.push(update.status);
      if (update.title) c.title = update.title;
      if (update.content) c.content = update.content.map((b) => text(b.content)).join("\n---\n");
      if (update._meta?.agentpool) c.metas.push(update._meta.agentpool);
    } else {
      assert.notEqual(update.sessionUpdate, "subagent_update");
    }
  }
  return calls;
}

test("a client without the extension: one tool call per delegation, the children nested in it", async () => {
  const agent = startAgent(acp, fixture("agentpool-style.yaml"));
  const updates = [];
  const app = acp
    .client({ name: "agentpool-acp-test" })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      updates.push(params);
    });
  await app.connectWith(agent.stream, async (ctx) => {
    await initialize(ctx, acp, FLAT);
    const { sessionId } = await ctx.request(acp.methods.agent.session.new, { cwd: here, mcpServers: [] });
    const res = await ctx.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "Plan the research" }],
    });
    assert.equal(res.stopReason, "end_turn");
    await settle();
    assert.equal(updates.length, agent.wire.updates, "the client dropped updates it could not validate");
    assert.ok(updates.every((u) => u.sessionId === sessionId), "an update on another session");
    const check = (calls) => {
      // The planner's one task call is the delegation: research_team, its
      // members searcher and critic, and the searcher's worker summarizer
      // (a grandchild of the team) are all inside it.
      assert.deepEqual([...calls.keys()].filter((id) => id.startsWith(SPAWN)), [], "a spawn tool call for a client without the extension");
      assert.equal(calls.size, 1, `tool calls: ${[...calls.keys()]}`);
      const [call] = calls.values();
      assert.equal(call.title, "Research");
      assert.deepEqual(call.statuses, ["in_progress", "in_progress", "completed"]);
      for (const want of ["→ spawned searcher", "→ spawned critic", "→ spawned summarizer", "Summary: goroutines are multiplexed", "✓ searcher", "✓ critic"]) {
        assert.ok(call.content.includes(want), `the task call's content lacks ${JSON.stringify(want)}:\n${call.content}`);
      }
      assert.equal(call.metas[0].child_session_id, call.metas.at(-1).child_session_id);
      assert.equal(call.metas.at(-1).stop_reason, "completed");
    };
    check(toolCalls(updates, sessionId));
    const answer = updates
      .filter((u) => u.update.sessionUpdate === "agent_message_chunk")
      .map((u) => text(u.update.content))
      .join("");
    assert.equal(answer, "Plan complete.");
    // session/load replays the same one call.
    const before = updates.length;
    await ctx.request(acp.methods.agent.session.load, { sessionId, cwd: here, mcpServers: [] });
    await settle();
    check(toolCalls(updates.slice(before), sessionId));
  });
  await agent.stop();
});

test("a failing child closes its spawn tool call as failed; the turn still ends", async () => {
  const agent = startAgent(acp, fixture("failing.yaml"));
  const updates = [];
  const app = acp
    .client({ name: "agentpool-acp-test" })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      updates.push(params);
    });
  await app.connectWith(agent.stream, async (ctx) => {
    await initialize(ctx, acp);
    const { sessionId } = await ctx.request(acp.methods.agent.session.new, { cwd: here, mcpServers: [] });
    const res = await ctx.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "Do the job" }],
    });
    assert.equal(res.stopReason, "end_turn");
    await settle();
    assert.equal(updates.length, agent.wire.updates);
    const spawns = checkSpawns(updates, sessionId);
    const byTitle = Object.fromEntries([...spawns.values()].map((s) => [s.title, s]));
    assert.equal(byTitle["Spawned: helper"].status, "completed");
    assert.equal(byTitle["Spawned: broken"].status, "failed");
    assert.match(byTitle["Spawned: broken"].final, /upstream failed/);
  });
  await agent.stop();
});

test("session/cancel mid-run answers cancelled and aborts the child", async () => {
  const agent = startAgent(acp, fixture("slow.yaml"));
  const updates = [];
  let childProgress;
  const progressed = new Promise((resolve) => (childProgress = resolve));
  const app = acp
    .client({ name: "agentpool-acp-test" })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      updates.push(params);
      const u = params.update;
      // The child's streamed text shows up as a second content block of
      // its spawn tool call.
      if (u.sessionUpdate === "tool_call_update" && u.toolCallId?.startsWith(SPAWN) && u.content?.length > 1 && !u.status) {
        childProgress();
      }
    });
  await app.connectWith(agent.stream, async (ctx) => {
    await initialize(ctx, acp);
    const { sessionId } = await ctx.request(acp.methods.agent.session.new, { cwd: here, mcpServers: [] });
    const started = Date.now();
    const prompt = ctx.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "Take your time" }],
    });
    await progressed;
    await ctx.notify(acp.methods.agent.session.cancel, { sessionId });
    const res = await prompt;
    assert.equal(res.stopReason, "cancelled");
    // The child alone needs over 3s: the cancel cut it short.
    assert.ok(Date.now() - started < 2500, "the prompt did not end soon after the cancel");
    await settle();
    const spawns = checkSpawns(updates, sessionId);
    assert.equal(spawns.size, 1);
    const [child] = spawns.values();
    assert.equal(child.status, "failed");
    // Read as words, not Go error text; the machine fields in _meta, and
    // the output not repeated in rawOutput.
    assert.equal(child.final, "Cancelled by the user.");
    assert.equal(child.rawOutput, undefined);
    assert.equal(child.endMeta.stop_reason, "aborted");

    // The session takes a new prompt after the cancel.
    await ctx.request(acp.methods.agent.session.setMode, { sessionId, modeId: "lead" });
  });
  await agent.stop();
});

test("unstable client with subagents: subagent_update and child-session updates", async () => {
  const agent = startAgent(unstable, fixture("agentpool-style.yaml"));
  const updates = [];
  const app = unstable
    .client({ name: "agentpool-acp-test" })
    .onNotification(unstable.methods.client.session.update, ({ params }) => {
      updates.push(params);
    });
  await app.connectWith(agent.stream, async (ctx) => {
    await initialize(ctx, unstable, { subagents: {} });
    const { sessionId } = await ctx.request(unstable.methods.agent.session.new, { cwd: here, mcpServers: [] });
    const res = await ctx.request(unstable.methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "Plan the research" }],
    });
    assert.equal(res.stopReason, "end_turn");
    await settle();
    assert.equal(updates.length, agent.wire.updates, "the client dropped updates it could not validate");

    // Spawn tool calls are still there for every client.
    const spawns = checkSpawns(updates, sessionId);
    assert.equal(spawns.size, 4);

    const running = new Map(); // child -> index of its subagent_update running
    const idle = new Map();
    const parentOf = new Map([[sessionId, null]]);
    for (const [i, { sessionId: on, update }] of updates.entries()) {
      if (update.sessionUpdate === "subagent_update") {
        const child = update.sessionId;
        assert.ok(spawns.has(child), `subagent_update for unknown child ${child}`);
        assert.equal(on, spawns.get(child).meta.parent_session_id, "subagent_update not on the parent session");
        assert.ok(parentOf.has(on), `subagent_update on ${on} before that session was announced`);
        if (update.state?.state === "running") {
          assert.ok(!running.has(child));
          assert.ok(update.title && update.description);
          running.set(child, i);
          parentOf.set(child, on);
        } else {
          assert.equal(update.state?.state, "idle");
          assert.equal(update.state.stopReason, "end_turn");
          assert.ok(running.has(child));
          idle.set(child, i);
        }
        continue;
      }
      if (on !== sessionId) {
        // The child's own update: after its announcement, before idle.
        assert.ok(running.has(on), `update for child ${on} before its subagent_update`);
        assert.ok(!idle.has(on), `update for child ${on} after it went idle`);
      }
    }
    assert.equal(running.size, 4);
    assert.equal(idle.size, 4);
    const childText = (child) =>
      updates
        .filter((u) => u.sessionId === child && u.update.sessionUpdate === "agent_message_chunk")
        .map((u) => text(u.update.content))
        .join("");
    const summarizer = [...spawns.entries()].find(([, s]) => s.title === "Spawned: summarizer")[0];
    assert.equal(childText(summarizer), "Summary: goroutines are multiplexed onto threads.");
    const searcher = [...spawns.entries()].find(([, s]) => s.title === "Spawned: searcher")[0];
    assert.ok(
      updates.some((u) => u.sessionId === searcher && u.update.sessionUpdate === "tool_call"),
      "the searcher's own tool call is shown in its session",
    );
  });
  await agent.stop();
});

test("tool approval: session/request_permission on the announced card; reject denies, allow_always becomes a rule", async () => {
  const agent = startAgent(acp, isolated("approval.yaml"));
  const updates = [];
  const asked = [];
  let answer = "reject_once";
  const app = acp
    .client({ name: "agentpool-acp-test" })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      updates.push(params);
    })
    .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
      // The tool call it names was announced pending with the same title
      // and kind (notifications and requests reach the client in order).
      const card = updates.filter((u) => u.update.toolCallId === params.toolCall.toolCallId).at(-1);
      asked.push({ params, card: card?.update });
      const option = params.options.find((o) => o.kind === answer);
      return { outcome: { outcome: "selected", optionId: option.optionId } };
    });
  await app.connectWith(agent.stream, async (ctx) => {
    await initialize(ctx, acp);
    const run = async (sessionId) => {
      const before = updates.length;
      const res = await ctx.request(acp.methods.agent.session.prompt, {
        sessionId,
        prompt: [{ type: "text", text: "Do the job" }],
      });
      assert.equal(res.stopReason, "end_turn");
      await settle();
      return checkSpawns(updates.slice(before), sessionId);
    };
    // A rejection denies the tool: no child, the call ends failed.
    const first = (await ctx.request(acp.methods.agent.session.new, { cwd: here, mcpServers: [] })).sessionId;
    let spawns = await run(first);
    assert.equal(asked.length, 1);
    const { params, card } = asked[0];
    assert.equal(params.sessionId, first);
    assert.equal(params.toolCall.title, "lead: Helping");
    assert.equal(params.toolCall.status, "pending");
    assert.equal(card.sessionUpdate, "tool_call");
    for (const k of ["title", "kind", "status"]) assert.equal(card[k], params.toolCall[k], k);
    assert.deepEqual(params.options.map((o) => o.kind).sort(), ["allow_always", "allow_once", "reject_always", "reject_once"]);
    assert.equal(spawns.size, 0);
    const denied = updates.find(
      (u) => u.sessionId === first && u.update.sessionUpdate === "tool_call_update" && u.update.status === "failed",
    );
    assert.ok(denied, "the denied tool call ends failed");

    // allow_always runs it and becomes the broker's rule for the lead's
    // task tool: no further question, in this session or another.
    answer = "allow_always";
    spawns = await run(first);
    assert.equal(asked.length, 2);
    assert.equal(spawns.size, 1);
    assert.equal([...spawns.values()][0].status, "completed");
    spawns = await run(first);
    const second = (await ctx.request(acp.methods.agent.session.new, { cwd: here, mcpServers: [] })).sessionId;
    const more = await run(second);
    assert.equal(asked.length, 2);
    assert.equal(spawns.size, 1);
    assert.equal(more.size, 1);
    assert.equal(updates.length, agent.wire.updates);
  });
  await agent.stop();
});

test("malformed lines get JSON-RPC errors and the server keeps serving", async () => {
  const child = spawn(BIN, ["serve", "acp", "-c", fixture("agentpool-style.yaml"), "--db", ":memory:"], {
    stdio: ["pipe", "pipe", "ignore"],
  });
  const lines = [];
  let buf = "";
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (d) => {
    buf += d;
    let nl;
    while ((nl = buf.indexOf("\n")) >= 0) {
      lines.push(JSON.parse(buf.slice(0, nl)));
      buf = buf.slice(nl + 1);
    }
  });
  child.stdin.write(
    [
      "not json",
      "",
      '[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}]',
      '{"jsonrpc":"2.0","id":2,"method":"no/such/method"}',
      '{"jsonrpc":"2.0","id":3,"method":"session/prompt"}',
      '{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":1}}',
    ].join("\n") + "\n",
  );
  child.stdin.end();
  const [code] = await once(child, "exit");
  assert.equal(code, 0);
  assert.deepEqual(
    lines.map((l) => [l.id, l.error?.code ?? "ok"]),
    [
      [null, -32700],
      [null, -32600],
      [2, -32601],
      [3, -32602],
      [4, "ok"],
    ],
  );
});

// withAgent runs op on a connection to agent; a failure kills the agent
// (its pipes would keep the test alive) and is rethrown.
async function withAgent(agent, app, op) {
  try {
    await app.connectWith(agent.stream, op);
  } catch (err) {
    agent.kill();
    throw new Error(`${err.stack ?? err}\nagentpool stderr:\n${agent.stderr()}`);
  }
}

// tempCwd makes a session directory (symlinks resolved, as the server
// reports paths).
function tempCwd() {
  return fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "agentpool-acp-")));
}

// fakeTerminals implements the client's terminal/* methods by running the
// commands with child_process, like an editor's terminal would.
function fakeTerminals(log) {
  const terms = new Map();
  let next = 0;
  const exitStatus = (t) => (t.exit ? { exitCode: t.exit.code, signal: t.exit.signal } : null);
  return {
    terms,
    create({ params }) {
      const id = `term-${++next}`;
      const env = { ...process.env };
      for (const { name, value } of params.env ?? []) env[name] = value;
      const child = spawn(params.command, params.args ?? [], { cwd: params.cwd ?? undefined, env, stdio: ["ignore", "pipe", "pipe"] });
      const t = { params, child, output: "", exit: null };
      t.exited = new Promise((resolve) => {
        child.on("close", (code, signal) => {
          t.exit = { code, signal };
          resolve();
        });
      });
      child.stdout.setEncoding("utf8").on("data", (d) => (t.output += d));
      child.stderr.setEncoding("utf8").on("data", (d) => (t.output += d));
      terms.set(id, t);
      log.push(["terminal/create", id]);
      return { terminalId: id };
    },
    output({ params }) {
      const t = terms.get(params.terminalId);
      log.push(["terminal/output", params.terminalId]);
      return { output: t.output, truncated: false, exitStatus: exitStatus(t) };
    },
    async waitForExit({ params }) {
      const t = terms.get(params.terminalId);
      log.push(["terminal/wait_for_exit", params.terminalId]);
      await t.exited;
      return exitStatus(t);
    },
    kill({ params }) {
      log.push(["terminal/kill", params.terminalId]);
      terms.get(params.terminalId).child.kill("SIGKILL");
      return {};
    },
    release({ params }) {
      log.push(["terminal/release", params.terminalId]);
      const t = terms.get(params.terminalId);
      if (!t.exit) t.child.kill("SIGKILL");
      t.released = true;
      return {};
    },
  };
}

test("client fs and terminal: Read shows the editor's buffer, Edit lands in it, Bash runs in its terminal", async () => {
  const cwd = tempCwd();
  const notes = path.join(cwd, "notes.md");
  fs.writeFileSync(notes, "disk text\n");
  const buffers = new Map([[notes, "unsaved: fix the tpyo\n"]]);
  const log = []; // client requests and tool call updates, in arrival order
  const updates = [];
  const term = fakeTerminals(log);
  const agent = startAgent(acp, fixture("tools.yaml"));
  const app = acp
    .client({ name: "agentpool-acp-test" })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      updates.push(params);
      const u = params.update;
      if (u.sessionUpdate === "tool_call" || u.sessionUpdate === "tool_call_update") log.push([u.sessionUpdate, u.toolCallId, u.status]);
    })
    .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => {
      log.push(["fs/read_text_file", params.path]);
      return { content: buffers.get(params.path) ?? "" };
    })
    .onRequest(acp.methods.client.fs.writeTextFile, ({ params }) => {
      log.push(["fs/write_text_file", params.path]);
      buffers.set(params.path, params.content);
      return {};
    })
    .onRequest(acp.methods.client.terminal.create, term.create)
    .onRequest(acp.methods.client.terminal.output, term.output)
    .onRequest(acp.methods.client.terminal.waitForExit, term.waitForExit)
    .onRequest(acp.methods.client.terminal.kill, term.kill)
    .onRequest(acp.methods.client.terminal.release, term.release);
  await withAgent(agent, app, async (ctx) => {
    await initialize(ctx, acp, { ...TREE, fs: { readTextFile: true, writeTextFile: true }, terminal: true });
    const { sessionId } = await ctx.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
    const res = await ctx.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "Fix the typo" }],
    });
    assert.equal(res.stopReason, "end_turn");
    await settle();
    assert.equal(updates.length, agent.wire.updates, "the client dropped updates it could not validate");
  });
  await agent.stop();

  const calls = updates.map((u) => u.update).filter((u) => u.sessionUpdate === "tool_call");
  assert.deepEqual(
    calls.map((c) => [c.kind, c.locations]),
    [
      ["read", [{ path: notes }]],
      ["edit", [{ path: notes }]],
      ["execute", undefined],
    ],
  );
  const final = (id) =>
    updates.map((u) => u.update).findLast((u) => u.toolCallId === id && u.sessionUpdate === "tool_call_update" && u.status);
  const texts = (u) => u.content.filter((c) => c.type === "content").map((c) => c.content.text).join("\n");
  const [read, edit, bash] = calls.map((c) => final(c.toolCallId));

  // Read: the editor's unsaved buffer, not the disk.
  assert.equal(read.status, "completed");
  assert.match(texts(read), /unsaved: fix the tpyo/);
  assert.doesNotMatch(texts(read), /disk text/);
  // Edit: a diff, written to the editor; the disk is untouched.
  assert.equal(edit.status, "completed", texts(edit));
  assert.deepEqual(edit.content.find((c) => c.type === "diff"), {
    type: "diff",
    path: notes,
    oldText: "unsaved: fix the tpyo\n",
    newText: "unsaved: fix the typo\n",
  });
  assert.equal(buffers.get(notes), "unsaved: fix the typo\n");
  assert.equal(fs.readFileSync(notes, "utf8"), "disk text\n");
  // Bash: in the editor's terminal, embedded in the tool call.
  assert.equal(term.terms.size, 1);
  const [[terminalId, t]] = [...term.terms];
  assert.equal(t.params.command, "/bin/sh");
  assert.deepEqual(t.params.args, ["-c", "echo from the terminal; exit 3"]);
  assert.equal(t.params.cwd, cwd);
  assert.equal(bash.status, "completed");
  assert.deepEqual(bash.content.filter((c) => c.type === "terminal"), [{ type: "terminal", terminalId }]);
  assert.match(texts(bash), /from the terminal/);
  assert.match(texts(bash), /Exit code: 3/);
  assert.ok(t.released, "the terminal was released");
  // The terminal is shown while it runs and released only after the
  // tool call's last update.
  const at = (pred) => log.findIndex(pred);
  const created = at(([m]) => m === "terminal/create");
  const attached = at(([k, id, st]) => k === "tool_call_update" && id === calls[2].toolCallId && !st);
  const waited = at(([m]) => m === "terminal/wait_for_exit");
  const ended = at(([k, id, st]) => k === "tool_call_update" && id === calls[2].toolCallId && st === "completed");
  const released = at(([m]) => m === "terminal/release");
  assert.ok(created >= 0 && created < attached && attached < ended && waited < ended && ended < released, JSON.stringify(log));
  for (const m of ["fs/read_text_file", "fs/write_text_file", "terminal/output"]) {
    assert.ok(at(([x]) => x === m) >= 0, `${m} was not called`);
  }
  fs.rmSync(cwd, { recursive: true, force: true });
});

const MCP_MODULES = process.env.AGENTPOOL_MCP_NODE_MODULES;

// serverProcesses lists the pids whose environment holds marker (Linux).
function serverProcesses(marker) {
  const pids = [];
  for (const pid of fs.readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      if (fs.readFileSync(`/proc/${pid}/environ`, "latin1").includes(marker)) pids.push(pid);
    } catch {
      // gone or not ours
    }
  }
  return pids;
}

test(
  "mcpServers of session/new: the editor's MCP server's tool is offered and works; session/close stops it",
  { skip: !MCP_MODULES && "set AGENTPOOL_MCP_NODE_MODULES to tests/mcp/node_modules (npm ci there)" },
  async () => {
    const marker = `AGENTPOOL_ACP_NODE_TEST=${process.pid}-${Date.now()}`;
    const [name, value] = marker.split("=");
    const everything = {
      name: "everything",
      command: "node",
      args: [path.join(MCP_MODULES, "@modelcontextprotocol/server-everything/dist/index.js"), "stdio"],
      env: [{ name, value }],
    };
    const agent = startAgent(acp, fixture("mcp.yaml"));
    const updates = [];
    const app = acp
      .client({ name: "agentpool-acp-test" })
      .onNotification(acp.methods.client.session.update, ({ params }) => {
        updates.push(params);
      });
    await withAgent(agent, app, async (ctx) => {
      await initialize(ctx, acp);
      const { sessionId } = await ctx.request(acp.methods.agent.session.new, { cwd: here, mcpServers: [everything] });
      const res = await ctx.request(acp.methods.agent.session.prompt, {
        sessionId,
        prompt: [{ type: "text", text: "Echo something" }],
      });
      assert.equal(res.stopReason, "end_turn");
      await settle();
      assert.equal(updates.length, agent.wire.updates);
      const call = updates.map((u) => u.update).find((u) => u.sessionUpdate === "tool_call");
      assert.ok(call.title, "the tool call has the server's title for the tool");
      assert.deepEqual(call.rawInput, { message: "hello from acp" });
      const done = updates.map((u) => u.update).findLast((u) => u.toolCallId === call.toolCallId && u.status);
      assert.equal(done.status, "completed");
      assert.equal(done.content[0].content.text, "Echo: hello from acp");
      if (process.platform === "linux") {
        assert.ok(serverProcesses(marker).length > 0, "the MCP server runs during the session");
      }
      await ctx.request(acp.methods.agent.session.close, { sessionId });
      if (process.platform === "linux") {
        for (let i = 0; i < 100 && serverProcesses(marker).length > 0; i++) await new Promise((r) => setTimeout(r, 50));
        assert.deepEqual(serverProcesses(marker), [], "the MCP server outlived session/close");
      }

      // Invalid entries are invalid-params errors naming the entry.
      await assert.rejects(
        ctx.request(acp.methods.agent.session.new, { cwd: here, mcpServers: [{ ...everything, command: "" }] }),
        (err) => err.code === -32602 && /mcpServers\[0\] \("everything"\): command is required/.test(err.message),
      );
    });
    await agent.stop();
  },
);
