// The page: loads the pool's agents, sessions and pending approvals,
// follows the event stream, and redraws the tree, the timeline and the
// transcript of the selected session (the URL's #/s/<id>) once per frame
// at most.

import * as api from './api.js';
import * as store from './store.js';
import { renderTree, filter, agentsSeen } from './tree.js';
import { renderTimeline } from './timeline.js';
import { renderDiffs } from './diffs.js';
import { renderTranscript, link, setRewind } from './transcript.js';

const $ = (id) => document.getElementById(id);
let selected = null;
const RECENT_RUNS = 5;

// --- token ------------------------------------------------------------

let tokenWaiters = null;
api.onTokenNeeded((why) => {
  if (!tokenWaiters) {
    tokenWaiters = [];
    $('token-error').textContent = why;
    $('token').value = '';
    $('token-dialog').showModal();
  }
  return new Promise((resolve) => tokenWaiters.push(resolve));
});
$('token-form').addEventListener('submit', () => {
  api.setToken($('token').value.trim());
  const ws = tokenWaiters || [];
  tokenWaiters = null;
  for (const w of ws) w();
});
$('token-dialog').addEventListener('cancel', (e) => e.preventDefault());

// --- drawing ----------------------------------------------------------

let frame = 0;
function redraw() {
  if (frame) return;
  frame = requestAnimationFrame(() => {
    frame = 0;
    const select = (id) => { location.hash = link(id); };
    fillAgentFilter();
    const n = renderTree($('tree'), selected, select, cancelSession);
    $('count').textContent = n ? `${n} run${n === 1 ? '' : 's'}` : '';
    renderTimeline($('timeline'), $('tl-summary'), selected, select);
    renderTranscript($('transcript'), $('crumbs'), selected);
    renderDiffs($('diff-panel'), $('diff-count'), $('diffs'), selected, redraw);
    const sel = selected && store.sessions.get(selected);
    const root = sel?.info ? store.rootOf(sel) : null;
    $('stop').disabled = !root || !runBusy(root);
    $('followup').hidden = !sel?.info;
    $('followup-text').placeholder = sel?.busy
      ? 'Message this session: it reads it at its next turn…'
      : 'Continue this session…';
    const waiting = store.pendingCount();
    document.title = waiting ? `(${waiting}) agentpool · waiting for approval` : 'agentpool';
  });
}
store.onChange(redraw);

function runBusy(s) {
  if (s.busy) return true;
  for (const c of s.children) {
    const k = store.sessions.get(c);
    if (k && runBusy(k)) return true;
  }
  return false;
}

// Running bars and durations grow with time.
setInterval(() => {
  if ([...store.sessions.values()].some((s) => s.busy)) redraw();
}, 250);

// --- search and filter ------------------------------------------------

$('filters').addEventListener('submit', (e) => e.preventDefault());
$('filters').addEventListener('input', () => {
  filter.text = $('filter-text').value.trim();
  filter.agent = $('filter-agent').value;
  filter.status = $('filter-status').value;
  redraw();
});

// fillAgentFilter keeps the agent select to the agents of the sessions
// known (the choice stays while its agent is listed).
function fillAgentFilter() {
  const sel = $('filter-agent');
  const want = agentsSeen();
  const have = [...sel.options].slice(1).map((o) => o.value);
  if (want.join('\n') === have.join('\n')) return;
  const cur = sel.value;
  sel.replaceChildren(new Option('any agent', ''), ...want.map((a) => new Option(a, a)));
  sel.value = want.includes(cur) ? cur : '';
}

// --- selection ----------------------------------------------------------

async function selectFromHash() {
  const m = location.hash.match(/^#\/s\/(.+)$/);
  selected = m ? decodeURIComponent(m[1]) : null;
  redraw();
  if (!selected) return;
  try {
    // Always read: the stored record (metadata.agentpool: own usage,
    // duration, error) is newer than what the events said of it.
    const known = store.sessions.get(selected)?.info;
    const mark = store.infoMark();
    const fresh = api.call('GET', `/session/${encodeURIComponent(selected)}`).then((info) => store.setInfo(info, mark));
    if (!known) await fresh; else fresh.then(redraw, showError);
    await loadRun(selected);
  } catch (e) {
    showError(e);
  }
  redraw();
}
window.addEventListener('hashchange', selectFromHash);

// loadRun reads the messages of every session of the selected session's
// run that the page has not read yet: what the events do not carry
// (runs that ended before the page opened) and the children's outcomes.
async function loadRun(id) {
  const root = store.rootOf(store.sessions.get(id));
  if (root.loading) return root.loading;
  root.loading = loadTree(root, id).finally(() => { root.loading = null; });
  return root.loading;
}

async function loadTree(root, id) {
  const todo = [];
  (function walk(s) {
    if (!s.loaded) todo.push(s.id);
    for (const c of s.children) { const k = store.sessions.get(c); if (k) walk(k); }
  })(root);
  todo.sort((a, b) => (a === id ? -1 : b === id ? 1 : 0)); // the selected one first
  const next = async () => {
    for (let sid = todo.shift(); sid; sid = todo.shift()) {
      store.loadMessages(sid, await api.call('GET', `/session/${encodeURIComponent(sid)}/message`));
    }
  };
  await Promise.all([next(), next(), next(), next()]);
}

// --- loading and the event stream ------------------------------------------

async function loadSessions() {
  const before = store.pendingIDs();
  const mark = store.statusMark();
  const infos = store.infoMark();
  const [list, status, asks] = await Promise.all([api.call('GET', '/session'), api.call('GET', '/session/status'), api.call('GET', '/permission')]);
  for (const info of list) store.setInfo(info, infos);
  // A session whose status an event changed while the snapshot was read
  // keeps the event's word: the snapshot may predate it (a run started
  // just after the stream opened was shown idle while its child ran).
  for (const s of store.sessions.values()) if (!(s.statusSeq > mark)) s.busy = Boolean(status[s.id]);
  // The approvals already pending (and those settled while the stream was
  // down); later ones come as permission.asked and permission.replied.
  store.loadApprovals(asks, before);
  redraw();
}

async function loadAgents() {
  const agents = await api.call('GET', '/agent');
  const groups = { agent: [], team: [] };
  for (const a of agents) (String(a.options?.sourceType || '').startsWith('team') ? groups.team : groups.agent).push(a);
  const sel = $('agent');
  sel.replaceChildren();
  for (const [label, list] of [['Agents', groups.agent], ['Teams', groups.team]]) {
    if (!list.length) continue;
    const g = document.createElement('optgroup');
    g.label = label;
    for (const a of list) {
      const o = new Option(a.name, a.name, false, a.mode === 'primary');
      o.title = a.description || '';
      g.append(o);
    }
    sel.append(g);
  }
}

function setConn(state) {
  const c = $('conn');
  c.dataset.state = state;
  c.querySelector('.label').textContent = state;
}

api.stream({
  onOpen: async () => {
    try {
      await Promise.all([loadSessions(), $('agent').options.length ? null : loadAgents()]);
      if (selected) await loadRun(selected);
      // The recent runs' messages tell how their children were spawned
      // and ended (the list alone does not); older runs load when opened.
      for (const r of store.roots().slice(0, RECENT_RUNS)) await loadRun(r.id);
      redraw();
    } catch (e) {
      showError(e);
    }
  },
  onEvent: (ev) => {
    store.apply(ev);
    // The selected session ended: its stored record has its totals.
    const sid = ev.properties?.sessionID;
    if (ev.type === 'session.idle' && sid && sid === selected) {
      const mark = store.infoMark();
      api.call('GET', `/session/${encodeURIComponent(sid)}`).then((info) => { store.setInfo(info, mark); redraw(); }, showError);
    }
  },
  onState: setConn,
});
selectFromHash();

// --- prompt and stop ----------------------------------------------------

$('prompt').addEventListener('submit', async (e) => {
  e.preventDefault();
  const text = $('text').value.trim();
  const agent = $('agent').value;
  if (!text) return;
  $('run').disabled = true;
  try {
    const s = await api.call('POST', '/session', {});
    store.setInfo(s).loaded = true; // new: its messages all come as events
    location.hash = link(s.id);
    const body = { parts: [{ type: 'text', text }] };
    if (agent) body.agent = agent; // none listed yet: the pool's default
    await api.call('POST', `/session/${encodeURIComponent(s.id)}/prompt_async`, body);
    $('text').value = '';
  } catch (err) {
    showError(err);
  } finally {
    $('run').disabled = false;
  }
});

$('stop').addEventListener('click', async () => {
  const sel = selected && store.sessions.get(selected);
  if (!sel?.info) return;
  $('stop').disabled = true;
  try {
    await api.call('POST', `/session/${encodeURIComponent(store.rootOf(sel).id)}/abort`);
  } catch (err) {
    showError(err);
  }
  redraw();
});

// The follow-up box sends a prompt to the selected session, root or
// child: a session at work reads it at its next turn; a finished one is
// continued with it (docs/control.md).
$('followup').addEventListener('submit', async (e) => {
  e.preventDefault();
  const text = $('followup-text').value.trim();
  if (!text || !selected) return;
  $('followup-send').disabled = true;
  try {
    await api.call('POST', `/session/${encodeURIComponent(selected)}/prompt_async`, { parts: [{ type: 'text', text }] });
    $('followup-text').value = '';
  } catch (err) {
    showError(err);
  } finally {
    $('followup-send').disabled = false;
  }
});

// cancelSession asks the server to cancel one session: a child alone (its
// parent goes on), a root with its whole run.
async function cancelSession(id) {
  try {
    await api.call('POST', `/session/${encodeURIComponent(id)}/abort`);
  } catch (err) {
    showError(err);
  }
  redraw();
}

// --- rewind -------------------------------------------------------------

// A message's rewind button asks what to take back (code, conversation,
// both), then posts the OpenCode revert with the mode
// (POST /session/{id}/revert?mode=…, the operation of `agentpool
// sessions rewind`) and reads the session's messages again.
let rewinding = null;
setRewind((sid, mid) => {
  const s = store.sessions.get(sid);
  const m = s?.messages.get(mid);
  rewinding = { sid, mid };
  const when = m?.info.time?.created ? new Date(m.info.time.created).toLocaleTimeString() : '';
  $('rewind-what').textContent = `${s?.info?.agent || 'session'} · ${m?.info.role === 'user' ? 'prompt' : 'answer'}${when ? ` of ${when}` : ''}`;
  $('rewind-error').textContent = '';
  $('rewind-confirm').disabled = false;
  $('rewind-dialog').showModal();
});
$('rewind-cancel').addEventListener('click', () => { rewinding = null; $('rewind-dialog').close(); });
$('rewind-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  if (!rewinding) return;
  const { sid, mid } = rewinding;
  const mode = new FormData($('rewind-form')).get('rewind-mode') || 'code';
  $('rewind-confirm').disabled = true;
  try {
    const mark = store.infoMark();
    const info = await api.call('POST', `/session/${encodeURIComponent(sid)}/revert?mode=${mode}`, { messageID: mid });
    store.setInfo(info, mark);
    store.loadMessages(sid, await api.call('GET', `/session/${encodeURIComponent(sid)}/message`));
    rewinding = null;
    $('rewind-dialog').close();
    showNote(mode === 'code' ? 'Files rewound.' : mode === 'conversation' ? 'Conversation rewound.' : 'Files and conversation rewound.');
  } catch (err) {
    $('rewind-error').textContent = err.reason || err.message;
    $('rewind-confirm').disabled = false;
  }
  redraw();
});

function showNote(text) {
  const box = document.createElement('div');
  box.className = 'toast note';
  box.setAttribute('role', 'status');
  box.textContent = text;
  document.body.append(box);
  setTimeout(() => box.remove(), 4000);
}

function showError(e) {
  console.error(e);
  const box = document.createElement('div');
  box.className = 'toast';
  box.setAttribute('role', 'alert');
  box.textContent = e.message || String(e);
  document.body.append(box);
  setTimeout(() => box.remove(), 6000);
}
