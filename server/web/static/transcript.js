// The selected session's transcript: prompts, streamed text, collapsible
// reasoning, tool calls with their inputs and results, and delegations as
// links into the child session (and, at the top, back to the parent).
// A tool call waiting for approval carries its approval card (approvals.js);
// a request whose tool part is not in the transcript gets its card at
// the end.
// Elements are keyed by message and part id and updated in place, so
// streaming text does not rebuild the page or close what the user opened.

import * as store from './store.js';
import { markdown } from './markdown.js';
import { approvalCard, approvalSig } from './approvals.js';
import { h, fmtTokens, fmtCost, fmtDuration, statusIcon, shortTitle, STATUS_LABEL, MECH_LABEL } from './format.js';

let cur = { id: null, msgs: new Map(), parts: new Map() };

export const link = (id) => `#/s/${encodeURIComponent(id)}`;

export function renderTranscript(el, crumbsEl, id) {
  const s = id && store.sessions.get(id);
  renderCrumbs(crumbsEl, s);
  if (!s?.info) {
    cur = { id: null, msgs: new Map(), parts: new Map() };
    el.replaceChildren(h('p.empty', {}, id ? 'Loading…' : 'Select a session, or start a run above.'));
    return;
  }
  const atBottom = el.scrollTop + el.clientHeight >= el.scrollHeight - 48;
  // Rewinding needs the run ended (the server refuses a running session).
  el.classList.toggle('busy-run', runBusy(store.rootOf(s)));
  if (cur.id !== id) {
    cur = { id, msgs: new Map(), parts: new Map() };
    el.replaceChildren();
  }
  el.querySelector(':scope > p.empty')?.remove();
  const msgs = [...s.messages.values()].sort((a, b) => (a.info.id < b.info.id ? -1 : 1));
  const aps = store.approvalsOf(s.id);
  const byCall = new Map(aps.filter((ap) => ap.req.tool?.callID).map((ap) => [ap.req.tool.callID, ap]));
  const placed = new Set();
  let prev = null;
  const keep = new Set(msgs.map((m) => m.info.id));
  for (const [mid, me] of cur.msgs) {
    if (!keep.has(mid)) { me.remove(); cur.msgs.delete(mid); }
  }
  for (const m of msgs) {
    let me = cur.msgs.get(m.info.id);
    if (!me) {
      me = messageEl(m, s);
      cur.msgs.set(m.info.id, me);
      if (prev) prev.after(me); else el.prepend(me);
    }
    updateMessage(me, m);
    const body = me.querySelector('.msg-body');
    let prevPart = null;
    const parts = [...m.parts.values()].filter((p) => p.type !== 'step-start' && p.type !== 'step-finish')
      .sort((a, b) => (a.id < b.id ? -1 : 1));
    for (const p of parts) {
      let pe = cur.parts.get(p.id);
      const ap = p.type === 'tool' ? byCall.get(p.callID) : null;
      if (ap) placed.add(ap);
      const sig = signature(p, ap);
      if (!pe) {
        pe = partEl(p, ap);
        cur.parts.set(p.id, pe);
        if (prevPart) prevPart.after(pe); else body.prepend(pe);
      } else if (pe.dataset.sig !== sig) {
        updatePart(pe, p, ap);
      }
      pe.dataset.sig = sig;
      prevPart = pe;
    }
    prev = me;
  }
  if (!msgs.length) el.replaceChildren(h('p.empty', {}, s.loaded ? 'No messages.' : 'Loading…'));
  renderUnplaced(el, aps.filter((ap) => !placed.has(ap)));
  if (atBottom) el.scrollTop = el.scrollHeight;
}

function renderCrumbs(el, s) {
  if (!s?.info) { el.replaceChildren(h('h2', {}, 'Transcript')); return; }
  const chain = [];
  for (let x = s; x; x = store.parentOf(x)) chain.unshift(x);
  const st = store.status(s);
  const { tokens, cost } = store.totals(s);
  const parent = store.parentOf(s);
  const err = st === 'error' || st === 'aborted' ? store.errorOf(s) : '';
  el.replaceChildren(...[
    parent ? h('a.back', { href: link(parent.id), title: 'Back to the parent session' }, '↑ Back to parent') : null,
    h('nav.path', { 'aria-label': 'Session path' }, chain.map((x, i) => [
      i ? h('span.sep', {}, '›') : null,
      x === s ? h('span.here', {}, x.info.agent || '?') : h('a', { href: link(x.id) }, x.info.agent || '?'),
    ])),
    h('span.stat', {}, statusIcon(st), ` ${STATUS_LABEL[st]}`,
      st !== 'idle' ? ` · ${fmtDuration(store.duration(s))}` : ''),
    usageEl(s, tokens, cost),
    err ? h('span.stat-error.error-text', { title: err }, err) : null,
  ].filter(Boolean));
}

// onRewind is called with (session id, message id) by a message's rewind
// button (app.js asks for the mode and confirms).
let onRewind = () => {};
export function setRewind(fn) { onRewind = fn; }

// usageEl is the node's tokens and cost: its own model calls' (input,
// output, from its stored record once it ended) and, for a node with
// children, its subtree's.
function usageEl(s, tokens, cost) {
  if (!tokens && !cost) return null;
  const o = store.own(s);
  const rec = !s.busy ? store.stored(s)?.own?.tokens : null;
  const split = rec && rec.input + rec.output ? ` (${rec.input} in / ${rec.output} out)` : '';
  const money = (c) => (c ? ` · ${fmtCost(c)}` : '');
  const text = s.children.size
    ? `own ${fmtTokens(o.tokens)}${split}${money(o.cost)} · subtree ${fmtTokens(tokens)}${money(cost)}`
    : `${fmtTokens(tokens)}${split}${money(cost)}`;
  return h('span.usage', { title: 'Tokens and cost of this session\'s own model calls, and of its whole subtree' }, text);
}

function messageEl(m, s) {
  const user = m.info.role === 'user';
  return h(`div.msg.${user ? 'user' : 'assistant'}`, { dataset: { id: m.info.id } },
    h('div.msg-head', {},
      h('span.who', {}, user ? (s.info.parentID ? 'Task' : 'Prompt') : (m.info.agent || s.info.agent || 'assistant')),
      h('span.meta'),
      h('button.rewind', { type: 'button', title: 'Rewind the files and/or the conversation to just before this message',
        onclick: () => onRewind(s.id, m.info.id) }, '⟲ Rewind')),
    h('div.msg-body'));
}

function updateMessage(me, m) {
  const meta = me.querySelector('.meta');
  const i = m.info;
  const bits = [];
  if (i.role === 'assistant') {
    const t = i.tokens ? i.tokens.input + i.tokens.output + i.tokens.reasoning : 0;
    if (t) bits.push(fmtTokens(t));
    if (i.time?.completed && i.time.created) bits.push(fmtDuration(i.time.completed - i.time.created));
  }
  if (i.time?.created) bits.push(new Date(i.time.created).toLocaleTimeString());
  meta.textContent = bits.join(' · ');
  let err = me.querySelector(':scope > .msg-error');
  if (i.error && !err) {
    err = h('div.msg-error', {}, i.error.name === 'MessageAbortedError' ? 'Aborted' : `Error: ${i.error.data?.message || i.error.name}`);
    me.append(err);
  }
}

// renderUnplaced keeps, at the end of the transcript, the cards of the
// requests whose tool part the transcript does not have.
function renderUnplaced(el, aps) {
  let box = el.querySelector(':scope > .approvals-unplaced');
  if (!aps.length) { box?.remove(); return; }
  if (!box) box = h('div.approvals-unplaced');
  if (box !== el.lastElementChild) el.append(box);
  const want = aps.map((ap) => approvalCard(ap, null));
  if (want.length !== box.children.length || want.some((c, i) => box.children[i] !== c)) box.replaceChildren(...want);
}

function signature(p, ap) {
  switch (p.type) {
    case 'text':
    case 'reasoning':
      return `${(p.text || '').length}:${p.time?.end ? 1 : 0}`;
    case 'tool': {
      const st = p.state || {};
      const child = st.metadata?.sessionId;
      const c = child && store.sessions.get(child);
      const waiting = c ? store.waitingIn(c) : 0;
      const cst = c?.info ? `${store.status(c)}:${c.info.title}` : '';
      return `${cst}:${st.status}:${st.title || ''}:${(st.output || '').length}:${st.error || ''}:${child || ''}:${waiting}:${approvalSig(ap)}`;
    }
    default:
      return p.type;
  }
}

function partEl(p, ap) {
  let el;
  switch (p.type) {
    case 'text':
      el = h('div.part.text');
      break;
    case 'reasoning':
      el = h('details.part.reasoning', {}, h('summary', {}, 'Thinking'), h('div.reasoning-text'));
      break;
    case 'tool':
      el = h('div.part.tool-wrap');
      break;
    default:
      el = h('div.part.other');
  }
  updatePart(el, p, ap);
  return el;
}

function updatePart(el, p, ap) {
  switch (p.type) {
    case 'text':
      el.replaceChildren(markdown(p.text || ''));
      el.classList.toggle('streaming', !p.time?.end && p.time?.start != null);
      break;
    case 'reasoning':
      el.querySelector('.reasoning-text').textContent = p.text || '';
      // A reasoning part with no measured time (its start and end the
      // same instant) says only that it thought.
      el.querySelector('summary').textContent = p.time?.end
        ? (p.time.end > p.time.start ? `Thought for ${fmtDuration(p.time.end - p.time.start)}` : 'Thought')
        : 'Thinking…';
      break;
    case 'tool':
      renderTool(el, p, ap);
      break;
    default:
      el.textContent = `[${p.type}]`;
  }
}

function renderTool(el, p, ap) {
  const st = p.state || {};
  const open = el.querySelector('details')?.open || false;
  const child = st.metadata?.sessionId;
  const status = { pending: 'running', running: 'running', completed: 'done', error: 'error' }[st.status] || 'running';
  let shown = child && st.status === 'error' && /cancel/i.test(st.error || '') ? 'aborted' : status;
  const details = h('details.tool', { open },
    h('summary', {}, statusIcon(shown), h('span.tool-name', {}, p.tool),
      h('span.tool-title', {}, st.title || ''), h('span.tool-status', {}, st.status || '')),
    h('div.tool-body', {},
      h('div.kv', {}, 'Input'), h('pre', {}, JSON.stringify(st.input ?? {}, null, 2)),
      st.output != null ? [h('div.kv', {}, 'Result'), h('pre', {}, st.output)] : null,
      st.error ? [h('div.kv', {}, 'Error'), h('pre.error-text', {}, st.error)] : null));
  if (!child) {
    el.replaceChildren(...[details, ap ? approvalCard(ap, p) : null].filter(Boolean));
    return;
  }
  const c = store.sessions.get(child);
  // The child's own status once it ended (its record: aborted, failed),
  // else what the tool part says.
  if (c?.info && !c.busy && st.status !== 'pending' && st.status !== 'running') shown = store.status(c);
  const waiting = c ? store.waitingIn(c) : 0;
  const agent = c?.info?.agent || st.input?.subagent_type || '?';
  const mech = st.metadata?.spawnMechanism;
  el.replaceChildren(h('div.delegation', {},
    h('div.deleg-head', {}, statusIcon(shown),
      h('span', {}, 'Delegated to ', h('b', {}, `@${agent}`)),
      mech ? h(`span.badge.mech-${mech}`, {}, MECH_LABEL[mech] || mech) : null,
      h('span.tool-title', {}, c?.info ? shortTitle(c.info) : (st.title || '')),
      waiting ? h('a.waiting', { href: link(c.id), title: 'A tool call below waits for your approval' },
        waiting === 1 ? 'waiting for approval' : `${waiting} waiting for approval`) : null,
      h('a.child-link', { href: link(child) }, 'Open session →')),
    details));
}

function runBusy(s) {
  if (s.busy) return true;
  for (const c of s.children) {
    const k = store.sessions.get(c);
    if (k && runBusy(k)) return true;
  }
  return false;
}
