// The session tree: every root (newest first) and its children, nested
// to any depth, with status, agent, mechanism, tokens, cost and duration.
// A session whose tool call waits for approval is marked waiting (and a
// folded row counts the waiting sessions it hides). A running session's
// row has a cancel button: a child is cancelled alone (its parent goes
// on), a root's whole run is stopped (docs/control.md).
// Rows are keyed by session id and updated in place (the page redraws
// several times a second while a run streams): a row under the pointer
// or holding the focus stays the same element, so clicks and keys land.

import * as store from './store.js';
import { h, fmtTokens, fmtCost, fmtDuration, STATUS_LABEL, MECH_LABEL } from './format.js';

const collapsed = new Set(); // session ids whose children are hidden
const expanded = new Set(); // large fan-outs the user opened
// A session with more children than this starts folded: its row counts
// them instead ("1,940 of 2,000 done · 3 failed"), so a big team does not
// push the rest of the tree out of sight.
const FOLD_OVER = 40;

const isFolded = (s) => collapsed.has(s.id) || (s.children.size > FOLD_OVER && !expanded.has(s.id));
const rows = new Map(); // session id -> its row element

// filter is what the search box and the two selects ask for: text (in
// the agent, title, error and the loaded messages' text and tool titles
// and errors; not a delegation's output, which is its child's text),
// agent, status ('waiting': a tool call waits for approval). A session that matches
// is shown with its ancestors (dimmed, for their place in the tree);
// folded subtrees open to show what matches in them.
export const filter = { text: '', agent: '', status: '' };
const filtering = () => Boolean(filter.text || filter.agent || filter.status);

function matches(s) {
  if (filter.agent && s.info.agent !== filter.agent) return false;
  if (filter.status) {
    if (filter.status === 'waiting' ? !store.pendingOf(s.id).length : store.status(s) !== filter.status) return false;
  }
  if (!filter.text) return true;
  const q = filter.text.toLowerCase();
  const has = (t) => typeof t === 'string' && t.toLowerCase().includes(q);
  if (has(s.info.agent) || has(s.info.title) || has(store.errorOf(s))) return true;
  for (const m of s.messages.values()) {
    for (const p of m.parts.values()) {
      if (has(p.text) || has(p.state?.title) || has(p.state?.error)) return true;
    }
  }
  return false;
}

// visible walks the tree for the filter: the matching sessions and
// their ancestors, in tree order (context: shown for an ancestor only).
function visible(s, depth, out) {
  const at = out.length;
  out.push({ s, depth, nkids: store.kids(s).length, context: true });
  let any = false;
  for (const c of store.kids(s)) any = visible(c, depth + 1, out) || any;
  const hit = matches(s);
  out[at].context = !hit;
  if (!hit && !any) out.length = at;
  return hit || any;
}

// agentsSeen lists the agents of the known sessions, for the agent select.
export function agentsSeen() {
  const set = new Set();
  for (const s of store.sessions.values()) if (s.info?.agent) set.add(s.info.agent);
  return [...set].sort();
}

export function renderTree(el, selected, select, cancel) {
  const rootsList = store.roots();
  const want = [];
  if (filtering()) for (const r of rootsList) visible(r, 0, want);
  else for (const r of rootsList) walk(r, 0, want);
  const keep = new Set(want.map(({ s }) => s.id));
  for (const [id, row] of rows) {
    if (!keep.has(id)) { row.remove(); rows.delete(id); }
  }
  el.querySelector(':scope > p.empty')?.remove();
  let at = el.firstElementChild;
  for (const { s, depth, nkids, context } of want) {
    let row = rows.get(s.id);
    if (!row) { row = newRow(s.id); rows.set(s.id, row); }
    update(row, s, depth, nkids, selected);
    row.classList.toggle('context', Boolean(context));
    if (row !== at) el.insertBefore(row, at); else at = at.nextElementSibling;
  }
  if (!want.length) el.append(h('p.empty', {}, filtering() ? 'No session matches.' : 'No sessions yet. Start a run above.'));
  el.onclick = (e) => {
    const row = e.target.closest('.row');
    if (!row) return;
    const stop = e.target.closest('button.cancel');
    if (stop) {
      stop.disabled = true; // until the next redraw: one cancel per click
      cancel(row.dataset.id);
      return;
    }
    if (e.target.closest('.twisty')) {
      const id = row.dataset.id;
      const s = store.sessions.get(id);
      if (s && isFolded(s)) { collapsed.delete(id); expanded.add(id); } else { collapsed.add(id); expanded.delete(id); }
      renderTree(el, selected, select, cancel);
      return;
    }
    select(row.dataset.id);
  };
  el.onkeydown = (e) => {
    const row = e.target.closest('.row');
    if (!row || e.target.closest('button.cancel')) return; // a button's keys are its own
    if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); select(row.dataset.id); }
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      (e.key === 'ArrowDown' ? row.nextElementSibling : row.previousElementSibling)?.focus();
    }
  };
  return rootsList.length;
}

function walk(s, depth, out) {
  const children = store.kids(s);
  out.push({ s, depth, nkids: children.length });
  if (isFolded(s)) return;
  for (const c of children) walk(c, depth + 1, out);
}

function newRow(id) {
  return h('div.row', { role: 'treeitem', tabindex: '0', dataset: { id } },
    h('span.twisty', { 'aria-hidden': 'true' }),
    h('span.st'),
    h('span.name', {}, h('span.agent'), h('span.badge'), h('span.wait', { hidden: true }), h('span.title')),
    h('span.metrics', {}, h('span.tok'), h('span.cost'), h('span.dur'),
      h('button.cancel', { type: 'button', hidden: true }, '■')));
}

// set changes what differs only, so an unchanged row is left alone.
function set(el, text) { if (el.textContent !== text) el.textContent = text; }
function attr(el, k, v) {
  if (v == null) { if (el.hasAttribute(k)) el.removeAttribute(k); return; }
  if (el.getAttribute(k) !== v) el.setAttribute(k, v);
}

function update(row, s, depth, nkids, selected) {
  const st = store.status(s);
  const { tokens, cost } = store.totals(s);
  const [twisty, mark, name, metrics] = row.children;
  const [agent, badge, wait, title] = name.children;
  const [tok, cst, dur, stop] = metrics.children;
  attr(row, 'aria-level', String(depth + 1));
  attr(row, 'aria-selected', s.id === selected ? 'true' : 'false');
  attr(row, 'aria-expanded', nkids ? String(!isFolded(s)) : null);
  attr(row, 'title', store.errorOf(s) && (st === 'error' || st === 'aborted') ? `${s.info.title}\n${STATUS_LABEL[st]}: ${store.errorOf(s)}` : s.info.title);
  row.dataset.status = st;
  row.dataset.depth = String(depth);
  row.style.setProperty('--depth', depth);
  row.classList.toggle('selected', s.id === selected);
  set(twisty, nkids ? (isFolded(s) ? '▸' : '▾') : '');
  mark.className = `st st-${st}`;
  attr(mark, 'title', STATUS_LABEL[st]);
  attr(mark, 'aria-label', STATUS_LABEL[st]);
  set(mark, { done: '✓', error: '✗', aborted: '⊘', idle: '○' }[st] || '');
  set(agent, s.info.agent || '?');
  const mech = s.info.parentID ? s.mechanism : null;
  badge.className = mech ? `badge mech-${mech}` : 'badge';
  badge.hidden = !mech;
  set(badge, mech ? (MECH_LABEL[mech] || mech) : '');
  const own = store.pendingOf(s.id).length;
  const hidden = nkids && isFolded(s) ? store.waitingIn(s) - own : 0;
  row.dataset.waiting = own ? 'true' : 'false';
  wait.hidden = !own && !hidden;
  set(wait, own ? 'waiting for approval' : hidden ? `${hidden} waiting below` : '');
  attr(wait, 'title', own ? 'A tool call of this session waits for your approval: open it to answer' : null);
  const text = s.info.parentID ? s.info.title.replace(/\s*\(@[^)]*subagent\)$/, '') : s.info.title;
  set(title, nkids && isFolded(s) ? `${foldSummary(s)} · ${text}` : text);
  // A node with children that has ended shows its own part beside its
  // subtree's, as `agentpool sessions tree` does.
  const mine = nkids && st !== 'running' ? store.own(s) : null;
  set(tok, tokens ? fmtTokens(tokens) + (mine && mine.tokens !== tokens ? ` (own ${fmtTokens(mine.tokens).replace(/ tok$/, '')})` : '') : '');
  set(cst, fmtCost(cost) + (mine && cost && Math.abs(mine.cost - cost) > 1e-9 ? ` (own ${fmtCost(mine.cost) || '$0'})` : ''));
  attr(tok, 'title', tokens ? `${tokens} tokens in this subtree${mine ? `, ${mine.tokens} of them its own` : ''}` : null);
  set(dur, st === 'idle' ? '' : fmtDuration(store.duration(s)));
  const running = st === 'running';
  if (stop.hidden === running) { stop.hidden = !running; stop.disabled = false; }
  const what = s.info.parentID ? 'Cancel this session and its children; its parent goes on' : 'Stop this run and all its child sessions';
  attr(stop, 'title', what);
  attr(stop, 'aria-label', s.info.parentID ? `Cancel ${s.info.agent || 'session'}` : `Stop ${s.info.agent || 'run'}`);
}

// foldSummary counts a folded session's children by status.
function foldSummary(s) {
  const n = { done: 0, error: 0, aborted: 0, running: 0 };
  for (const id of s.children) {
    const c = store.sessions.get(id);
    if (c) n[store.status(c)] = (n[store.status(c)] || 0) + 1;
  }
  const fmt = (x) => x.toLocaleString('en');
  const parts = [`${fmt(n.done)} of ${fmt(s.children.size)} done`];
  if (n.running) parts.push(`${fmt(n.running)} running`);
  if (n.error) parts.push(`${fmt(n.error)} failed`);
  if (n.aborted) parts.push(`${fmt(n.aborted)} aborted`);
  return parts.join(', ');
}
