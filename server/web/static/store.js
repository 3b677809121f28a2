// The page's model of the server's sessions: every session seen (from the
// lists and the event stream), their parent/child links, run state and
// messages, and the approvals the server asks for. Views read it;
// changed() tells them to redraw.

export const sessions = new Map(); // id -> Session (below)
let skew = 0; // server clock minus ours (ms), from the events' times
const listeners = new Set();

export function onChange(fn) { listeners.add(fn); }
function changed(id) { for (const fn of listeners) fn(id); }

export const now = () => Date.now() + skew;

// get returns the session record of id, made empty when it is new.
function get(id) {
  let s = sessions.get(id);
  if (!s) {
    s = {
      id, info: null, busy: false, outcome: null, mechanism: null, ended: null, start: null,
      children: new Set(), messages: new Map(), loaded: false, live: { input: 0, output: 0, reasoning: 0, cost: 0 },
    };
    sessions.set(id, s);
  }
  return s;
}

// infoSeq counts the infos events applied; each session keeps the count
// of its last one (infoSeq), so that a record read while events came
// (infoMark, before the read) does not undo what a later event said: a
// run's root read on its selection, before its prompt named its agent,
// came back after the event that did, and the row showed the pool's
// default agent.
let infoSeq = 0;
export const infoMark = () => infoSeq;

// setInfo records a session's info and its place in the tree. read, when
// set, is the infoMark taken before the record was read from the server.
export function setInfo(info, read) {
  const s = get(info.id);
  // An older info from an event is ignored; one read from the server is
  // the stored record as it was read, with its totals: it wins unless an
  // event came since the read began (the events' times are the server's
  // clock, the record's the run's: they do not order the two).
  if (read == null && s.info && s.info.time.updated > info.time.updated) return s;
  if (read != null && s.infoSeq > read) return s;
  if (read == null) s.infoSeq = ++infoSeq;
  s.info = info;
  if (info.parentID) {
    get(info.parentID).children.add(info.id);
    if (s.start == null) s.start = info.time.created;
  }
  if (!s.busy && info.time.updated) s.ended = Math.max(s.ended || 0, info.time.updated);
  return s;
}

// statusSeq counts the session.status and session.idle events applied;
// each session keeps the count of its last one (statusSeq), so that a
// snapshot of GET /session/status read while events came does not undo
// what a later event said (statusMark, before the read).
let statusSeq = 0;
export const statusMark = () => statusSeq;

export function setBusy(ids) {
  for (const id of ids) get(id).busy = true;
}

export const parentOf = (s) => (s.info?.parentID ? sessions.get(s.info.parentID) : null);

export function rootOf(s) {
  let r = s;
  for (let p = parentOf(r); p; p = parentOf(r)) r = p;
  return r;
}

// stored is what the server read from the session's stored record
// (metadata.agentpool): status, stopReason, error, durationMs, own
// tokens and cost of its last run. The record is the truth of an ended
// session: a page opened after the run (or after a restart of the
// server) reads it, not a guess from the messages.
export const stored = (s) => s.info?.metadata?.agentpool || null;

const STORED_STATUS = { completed: 'done', aborted: 'aborted', error: 'error', interrupted: 'error' };

// status is what a session's row shows: running, done, error, aborted,
// or idle (a session that never ran).
export function status(s) {
  if (s.busy) return 'running';
  const rec = STORED_STATUS[stored(s)?.status];
  if (rec) return rec;
  if (s.outcome) return s.outcome;
  // A root that never ran: no messages, tokens or children known.
  const t = s.info?.tokens;
  if (!s.info?.parentID && s.messages.size === 0 && s.children.size === 0 && !(t && t.input + t.output)) return 'idle';
  return 'done';
}

// tokens and cost of a session's subtree: the store's totals once it has
// ended, else what its messages have counted so far plus its children.
export function totals(s) {
  const t = s.info?.tokens;
  const stored = t ? t.input + t.output + t.reasoning : 0;
  if (!s.busy && stored > 0) return { tokens: stored, cost: s.info.cost || 0 };
  let tokens = s.live.input + s.live.output + s.live.reasoning;
  let cost = s.live.cost;
  for (const c of s.children) {
    const ct = totals(sessions.get(c));
    tokens += ct.tokens;
    cost += ct.cost;
  }
  return { tokens: Math.max(tokens, stored), cost: Math.max(cost, s.info?.cost || 0) };
}

// own is the part of a session's totals that is not its children's: its
// own model calls (a budget counts the subtree, the row shows both).
export function own(s) {
  const o = stored(s)?.own;
  if (!s.busy && o?.tokens) {
    const t = o.tokens;
    const n = t.input + t.output + t.reasoning;
    if (n > 0 || !s.children.size) return { tokens: n, cost: o.cost || 0 };
  }
  const t = totals(s);
  let { tokens, cost } = t;
  for (const c of s.children) {
    const ct = totals(sessions.get(c));
    tokens -= ct.tokens;
    cost -= ct.cost;
  }
  return { tokens: Math.max(0, tokens), cost: Math.max(0, cost) };
}

// errorOf is why a session failed or was aborted: its record's error,
// else what the event stream said.
export const errorOf = (s) => stored(s)?.error || s.error || '';

// span is [start, end] of a session in server milliseconds (end: now
// while it runs). An ended session with a stored duration ends that long
// after its last run started (the record's duration, not the time the
// server marked it idle).
export function span(s) {
  const start = s.start ?? s.info?.time.created ?? now();
  if (s.busy) return [start, Math.max(start, now())];
  const d = stored(s)?.durationMs;
  if (d > 0) {
    const from = Math.max(start, s.runStart ?? start);
    return [start, from + d];
  }
  const end = s.ended ?? s.info?.time.updated ?? start;
  return [start, Math.max(start, end)];
}

// duration of a session's last run (or of its run so far).
export function duration(s) {
  const d = stored(s)?.durationMs;
  if (!s.busy && d > 0) return d;
  const [a, b] = span(s);
  return b - a;
}

// kids are a session's children, oldest first.
export function kids(s) {
  return [...s.children].map((id) => sessions.get(id)).filter((c) => c?.info)
    .sort((a, b) => a.info.time.created - b.info.time.created || (a.id < b.id ? 1 : -1));
}

// roots are the root sessions, newest first.
export function roots() {
  return [...sessions.values()].filter((s) => s.info && !s.info.parentID)
    .sort((a, b) => (b.info.time.created - a.info.time.created) || (a.id < b.id ? -1 : 1));
}

// --- messages ---------------------------------------------------------

function message(s, info) {
  let m = s.messages.get(info.id);
  if (!m) {
    m = { info, parts: new Map() };
    s.messages.set(info.id, m);
  }
  return m;
}

function setMessage(s, info) {
  const m = message(s, info);
  m.info = info;
  // A root's run starts with its first prompt, not when it was created.
  if (info.role === 'user' && !s.info?.parentID && s.start == null) s.start = info.time.created;
  if (info.role === 'assistant') {
    countLive(s);
    if (info.error) s.outcome = info.error.name === 'MessageAbortedError' ? 'aborted' : 'error';
  }
}

// countLive sums the session's own assistant messages.
function countLive(s) {
  const l = { input: 0, output: 0, reasoning: 0, cost: 0 };
  for (const { info } of s.messages.values()) {
    if (info.role !== 'assistant' || !info.tokens) continue;
    l.input += info.tokens.input; l.output += info.tokens.output; l.reasoning += info.tokens.reasoning;
    l.cost += info.cost || 0;
  }
  s.live = l;
}

function setPart(s, part) {
  const m = s.messages.get(part.messageID) || message(s, { id: part.messageID, role: 'assistant', time: {} });
  m.parts.set(part.id, part);
  if (part.type === 'tool' && part.state?.metadata?.sessionId) linkChild(s, part);
}

// linkChild records what a spawning tool part says of its child: how it
// was spawned and how it ended.
function linkChild(parent, part) {
  const meta = part.state.metadata;
  const c = get(meta.sessionId);
  c.mechanism = meta.spawnMechanism || c.mechanism;
  c.spawnPart = part.id;
  if (part.state.status === 'error' || meta.stopReason === 'aborted' || meta.stopReason === 'error') {
    const aborted = meta.stopReason === 'aborted' || /cancel/i.test(part.state.error || '');
    c.outcome = aborted ? 'aborted' : 'error';
  } else if (part.state.status === 'completed' && !c.outcome) {
    c.outcome = 'done';
  }
  if (part.state.time?.end && !c.busy) c.ended = c.ended ?? part.state.time.end;
}

// loadMessages replaces a session's messages with the server's.
export function loadMessages(id, list) {
  const s = get(id);
  s.messages.clear();
  for (const { info, parts } of list) {
    message(s, info).info = info;
    for (const p of parts) setPart(s, p);
    setMessage(s, info);
  }
  const first = list.find((m) => m.info.role === 'user');
  if (first && !s.info?.parentID) s.start = first.info.time.created;
  const lastUser = list.findLast((m) => m.info.role === 'user');
  if (lastUser && !s.info?.parentID) s.runStart = lastUser.info.time.created;
  s.loaded = true;
  changed(id);
}

// --- events -----------------------------------------------------------

export function apply(ev) {
  const p = ev.properties || {};
  if (typeof p.time === 'number') skew = p.time - Date.now();
  const id = p.sessionID || p.info?.sessionID;
  switch (ev.type) {
    case 'session.created':
      // Created while the page follows: its messages all come as events.
      setInfo(p.info).loaded = true;
      break;
    case 'session.updated':
      setInfo(p.info);
      break;
    case 'session.deleted':
      if (p.info) {
        sessions.delete(p.info.id);
        const par = p.info.parentID && sessions.get(p.info.parentID);
        if (par) par.children.delete(p.info.id);
      }
      break;
    case 'session.status': {
      const s = get(id);
      s.statusSeq = ++statusSeq;
      const busy = p.status?.type === 'busy';
      if (busy && !s.busy) {
        s.outcome = null;
        s.ended = null;
        if (!s.info?.parentID && s.start == null) s.start = s.info?.time.updated ?? now();
        if (!s.info?.parentID) s.runStart = now();
      }
      if (!busy && s.busy) s.ended = s.info?.time.updated && s.info.time.updated > (s.start || 0) ? s.info.time.updated : now();
      s.busy = busy;
      if (!busy && !s.outcome) s.outcome = 'done';
      break;
    }
    case 'session.idle': {
      const s = get(id);
      s.statusSeq = ++statusSeq;
      if (s.busy) s.ended = now();
      s.busy = false;
      if (!s.outcome) s.outcome = 'done';
      break;
    }
    case 'session.error': {
      const s = get(id);
      s.outcome = p.error?.name === 'MessageAbortedError' ? 'aborted' : 'error';
      s.error = p.error?.data?.message || p.error?.name;
      break;
    }
    case 'message.updated':
      setMessage(get(id), p.info);
      break;
    case 'message.removed':
      // A rewind cut the conversation (POST .../revert).
      get(id).messages.delete(p.messageID);
      break;
    case 'message.part.updated':
      setPart(get(id), p.part);
      break;
    case 'permission.asked':
      asked(p);
      break;
    case 'permission.replied':
      settle(p.requestID, p.reply);
      break;
    case 'message.part.delta': {
      const part = get(id).messages.get(p.messageID)?.parts.get(p.partID);
      if (part && p.field) part[p.field] = (part[p.field] || '') + p.delta;
      break;
    }
    default:
      return;
  }
  changed(id, ev);
}

// --- approvals ----------------------------------------------------------

// approvals are the permission requests this page has seen: request id ->
// { req, sessionID, state, mine, sending, error }. state is 'pending', the reply
// that settled it ('once' | 'always' | 'reject'), or 'gone' (no longer
// pending when the page re-read the list: answered or withdrawn while the
// stream was down, or by the time this page's answer arrived). mine: this
// page sent the answer (message: the words of its rejection); sending:
// its POST has not returned; error: why this page's answer failed.
export const approvals = new Map();

// realSession is the session a request's tool runs in. The server shows a
// grandchild's (or deeper) request on its ancestor that is a root's child
// (the OpenCode TUI draws no deeper prompts) and names the real session
// in metadata.sessionID; the tree marks the real one.
export const realSession = (req) => req.metadata?.sessionID || req.sessionID;

function asked(req) {
  const ap = approvals.get(req.id);
  if (ap && ap.state !== 'pending') return; // settled before the list that still had it arrived
  approvals.set(req.id, { ...ap, req, sessionID: realSession(req), state: 'pending', mine: ap?.mine || false, sending: ap?.sending || false, error: ap?.error || '' });
}

function settle(id, reply) {
  const ap = approvals.get(id);
  if (ap && ap.state === 'pending') ap.state = reply || 'reject';
}

// pendingIDs are the requests pending here, taken before GET /permission
// is sent (see loadApprovals).
export const pendingIDs = () => new Set([...approvals.values()].filter((ap) => ap.state === 'pending').map((ap) => ap.req.id));

// loadApprovals takes GET /permission (after each connection of the
// stream): what is listed is pending; what was pending here before the
// list was asked for (before) and is not listed was answered or withdrawn
// while the stream was down. A request asked while the list was on its
// way is not in before: its permission.asked is newer than the list.
export function loadApprovals(list, before) {
  const listed = new Set(list.map((r) => r.id));
  for (const id of before) {
    const ap = approvals.get(id);
    if (ap?.state === 'pending' && !listed.has(id)) ap.state = 'gone';
  }
  for (const req of list) asked(req);
  changed(null);
}

// answering records that this page sends the answer of request id, with
// the message of a rejection (its permission.replied may arrive before
// the POST returns).
export function answering(id, message) {
  const ap = approvals.get(id);
  if (!ap) return;
  ap.mine = true;
  ap.message = message;
  ap.sending = true;
  ap.error = '';
  changed(ap.sessionID);
}

// answered records how the POST of request id ended: error is '' when
// the server took the answer; gone says the server no longer had the
// request (answered elsewhere first, or withdrawn).
export function answered(id, error, gone) {
  const ap = approvals.get(id);
  if (!ap) return;
  ap.sending = false;
  if (error) {
    ap.mine = false;
    ap.error = error;
    if (gone && ap.state === 'pending') ap.state = 'gone';
  }
  changed(ap.sessionID);
}

// pendingOf lists the pending requests of session id, oldest first.
export function pendingOf(id) {
  return [...approvals.values()].filter((ap) => ap.state === 'pending' && ap.sessionID === id)
    .sort((a, b) => (a.req.id < b.req.id ? -1 : 1));
}

// waitingIn counts the pending requests of s and of every session below it.
export function waitingIn(s) {
  let n = 0;
  for (const ap of approvals.values()) {
    if (ap.state !== 'pending') continue;
    for (let x = sessions.get(ap.sessionID); x; x = parentOf(x)) {
      if (x === s) { n++; break; }
    }
  }
  return n;
}

// approvalsOf lists every request this page has seen of session id
// (pending and settled), oldest first.
export function approvalsOf(id) {
  return [...approvals.values()].filter((ap) => ap.sessionID === id).sort((a, b) => (a.req.id < b.req.id ? -1 : 1));
}

export function pendingCount() {
  let n = 0;
  for (const ap of approvals.values()) if (ap.state === 'pending') n++;
  return n;
}
