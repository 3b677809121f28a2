// The session tree: every root (newest first) and its children, nested
// to any depth, with status, agent, mechanism, tokens, cost and duration.

import * as store from './store.js';
import { h, fmtTokens, fmtCost, fmtDuration, statusIcon, shortTitle, MECH_LABEL } from './format.js';

const collapsed = new Set(); // session ids whose children are hidden

export function renderTree(el, selected, select) {
  const rootsList = store.roots();
  const rows = [];
  for (const r of rootsList) walk(r, 0, rows, selected);
  el.replaceChildren(...rows);
  if (!rows.length) el.append(h('p.empty', {}, 'No sessions yet. Start a run above.'));
  el.onclick = (e) => {
    const tw = e.target.closest('.twisty');
    const row = e.target.closest('.row');
    if (!row) return;
    if (tw) {
      const id = row.dataset.id;
      if (collapsed.has(id)) collapsed.delete(id); else collapsed.add(id);
      renderTree(el, selected, select);
      return;
    }
    select(row.dataset.id);
  };
  return rootsList.length;
}

function walk(s, depth, rows, selected) {
  const children = store.kids(s);
  rows.push(row(s, depth, children.length, selected));
  if (collapsed.has(s.id)) return;
  for (const c of children) walk(c, depth + 1, rows, selected);
}

function row(s, depth, nkids, selected) {
  const st = store.status(s);
  const { tokens, cost } = store.totals(s);
  const [a, b] = store.span(s);
  const el = h('div.row', {
    role: 'treeitem', 'aria-level': depth + 1, 'aria-selected': s.id === selected ? 'true' : 'false',
    'aria-expanded': nkids ? String(!collapsed.has(s.id)) : null,
    dataset: { id: s.id, status: st, depth: String(depth) }, title: s.info.title,
  },
  h('span.twisty', { 'aria-hidden': 'true' }, nkids ? (collapsed.has(s.id) ? '▸' : '▾') : ''),
  statusIcon(st),
  h('span.name', {},
    h('span.agent', {}, s.info.agent || '?'),
    s.info.parentID && s.mechanism ? h(`span.badge.mech-${s.mechanism}`, {}, MECH_LABEL[s.mechanism] || s.mechanism) : null,
    h('span.title', {}, s.info.parentID ? shortTitle(s.info) : s.info.title)),
  h('span.metrics', {},
    h('span.tok', {}, tokens ? fmtTokens(tokens) : ''),
    h('span.cost', {}, fmtCost(cost)),
    h('span.dur', {}, st === 'idle' ? '' : fmtDuration(b - a))));
  el.style.setProperty('--depth', depth);
  if (s.id === selected) el.classList.add('selected');
  return el;
}
