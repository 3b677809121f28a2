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
import * as acp from "@agentclientprotocol/sdk";
import * as unstable from "@agentclientprotocol/sdk/unstable";

const BIN = process.env.AGENTPOOL_BIN;
if (!BIN) {
  throw new Error("set AGENTPOOL_BIN to the agentpool binary");
}
const here = path.dirname(fileURLToPath(import.meta.url));
const fixture = (name) => path.join(here, "fixtures", name);
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

async function initialize(ctx, sdk, clientCapabilities = {}) {
  const init = await ctx.request(sdk.methods.agent.initialize, {
    protocolVersion: sdk.PROTOCOL_VERSION,
    clientCapabilities,
    clientInfo: { name: "agentpool-acp-test", version: "1.0.0" },
  });
  assert.equal(init.protocolVersion, 1);
  assert.equal(init.agentCapabilities.loadSession, true);
  assert.ok(init.agentCapabilities.sessionCapabilities.list);
  assert.deepEqual(init.agentCapabilities.mcpCapabilities, { http: false, sse: false });
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
    assert.match(child.final, /Cancelled/);
    assert.equal(child.rawOutput.stop_reason, "aborted");

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

test("tool approval: session/request_permission, allow_always is remembered, reject denies", async () => {
  const agent = startAgent(acp, fixture("approval.yaml"));
  const updates = [];
  const asked = [];
  let answer = "allow_always";
  const app = acp
    .client({ name: "agentpool-acp-test" })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      updates.push(params);
    })
    .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
      asked.push(params);
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
    const first = (await ctx.request(acp.methods.agent.session.new, { cwd: here, mcpServers: [] })).sessionId;
    let spawns = await run(first);
    assert.equal(asked.length, 1);
    assert.equal(asked[0].sessionId, first);
    assert.equal(asked[0].toolCall.title, "task");
    assert.equal(asked[0].toolCall.status, "pending");
    assert.deepEqual(asked[0].options.map((o) => o.kind).sort(), ["allow_always", "allow_once", "reject_always", "reject_once"]);
    assert.equal(spawns.size, 1);
    assert.equal([...spawns.values()][0].status, "completed");

    // allow_always holds for the rest of the session: no second question.
    spawns = await run(first);
    assert.equal(asked.length, 1);
    assert.equal(spawns.size, 1);

    // Another session asks again; a rejection denies the tool (no child).
    answer = "reject_once";
    const second = (await ctx.request(acp.methods.agent.session.new, { cwd: here, mcpServers: [] })).sessionId;
    spawns = await run(second);
    assert.equal(asked.length, 2);
    assert.equal(spawns.size, 0);
    const denied = updates.find(
      (u) => u.sessionId === second && u.update.sessionUpdate === "tool_call_update" && u.update.status === "failed",
    );
    assert.ok(denied, "the denied tool call ends failed");
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
