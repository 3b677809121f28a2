// The diff panel: the files the selected session and the sessions below
// it changed, each session's files as GET /session/{id}/diff answers
// them (from the Write and Edit reports of its event log: one patch per
// file, from before its first change to after its last), grouped by
// session. A session's list is read again when it has changed since
// (its info's updated time) and is not running; at most MAX_SESSIONS
// sessions of a subtree are read.

import * as store from './store.js';
import * as api from './api.js';
import { diffView } from './approvals.js';
import { h } from './format.js';

const MAX_SESSIONS = 50;
const cache = new Map(); // session id -> { key, list } ; list null while read
let shown = ''; // what the panel shows (its signature), to skip redraws

function keyOf(s) { return `${s.info?.time.updated}:${s.busy}`; }

function subtree(s, out) {
  if (out.length >= MAX_SESSIONS) return out;
  out.push(s);
  for (const c of store.kids(s)) subtree(c, out);
  return out;
}

// renderDiffs draws the panel of the selected session; onLoaded is called
// when a list it asked for arrives (the page redraws).
export function renderDiffs(panel, countEl, el, selected, onLoaded) {
  const s = selected && store.sessions.get(selected);
  panel.hidden = !s?.info;
  if (!s?.info) return;
  const groups = [];
  let files = 0;
  for (const x of subtree(s, [])) {
    const c = cache.get(x.id);
    if (!x.busy && (!c || c.key !== keyOf(x))) load(x, onLoaded);
    const list = cache.get(x.id)?.list;
    if (list?.length) { groups.push({ s: x, list }); files += list.length; }
  }
  countEl.textContent = files ? `${files} file${files === 1 ? '' : 's'}` : 'none';
  const sig = `${selected}|${groups.map((g) => `${g.s.id}:${g.list.map((d) => `${d.file}${d.patch.length}`).join(',')}`).join(';')}`;
  if (sig === shown) return;
  shown = sig;
  const open = new Set([...el.querySelectorAll('details.diff-file[open]')].map((d) => d.dataset.key));
  el.replaceChildren(...(groups.length ? groups.map(({ s: x, list }) => h('div.diff-group', { dataset: { id: x.id } },
    h('div.diff-who', {}, h('a', { href: `#/s/${encodeURIComponent(x.id)}` }, `@${x.info.agent || '?'}`), ' ', h('span.muted', {}, x.info.title || '')),
    list.map((d) => {
      const key = `${x.id}:${d.file}`;
      return h('details.diff-file', { open: open.has(key), dataset: { key, file: d.file } },
        h('summary', {}, h('span.diff-name', {}, d.file), ' ', h('span.d-add', {}, `+${d.additions}`), ' ',
          h('span.d-del', {}, `−${d.deletions}`), ' ', h('span.muted', {}, d.status)),
        diffView(d.patch));
    })))
    : [h('p.empty', {}, 'No file changed by this session or below it.')]));
}

function load(s, onLoaded) {
  const key = keyOf(s);
  const prev = cache.get(s.id);
  cache.set(s.id, { key, list: prev?.list ?? null });
  api.call('GET', `/session/${encodeURIComponent(s.id)}/diff`)
    .then((list) => { if (cache.get(s.id)?.key === key) cache.set(s.id, { key, list }); })
    .catch((e) => console.warn('diff', s.id, e))
    .finally(onLoaded);
}
