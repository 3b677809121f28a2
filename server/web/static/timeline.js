// The timeline of a run: one bar per session of the selected session's
// root, in tree order, from its start to its end (now while it runs).
// The critical path (from the root, always the child that ended last)
// is drawn solid, the other bars faded: the run's duration waited for
// the first, not for the others.

import * as store from './store.js';
import { h, fmtDuration, shortTitle, STATUS_LABEL } from './format.js';

export function renderTimeline(el, summaryEl, selected, select) {
  const sel = selected && store.sessions.get(selected);
  if (!sel?.info) {
    el.replaceChildren(h('p.empty', {}, 'Select a session to see the timeline of its run.'));
    summaryEl.textContent = '';
    return;
  }
  const root = store.rootOf(sel);
  const rows = [];
  (function walk(s, depth) {
    rows.push({ s, depth });
    for (const c of store.kids(s)) walk(c, depth + 1);
  })(root, 0);

  const spans = new Map(rows.map(({ s }) => [s.id, store.span(s)]));
  let t0 = Infinity;
  let t1 = -Infinity;
  for (const [a, b] of spans.values()) { t0 = Math.min(t0, a); t1 = Math.max(t1, b); }
  const total = Math.max(t1 - t0, 1);
  const critical = criticalPath(root, spans);
  const running = rows.filter(({ s }) => s.busy).length;
  summaryEl.textContent = `${rows.length} session${rows.length === 1 ? '' : 's'} · ${fmtDuration(t1 - t0)}` +
    (running ? ` · ${running} running` : '');

  const axis = el.querySelector(':scope > .tl-axis') || h('div.tl-axis', {}, h('div.tl-label'), h('div.tl-track.tl-ticks'));
  axis.lastElementChild.replaceWith(ticks(total));
  if (el.firstElementChild !== axis) el.replaceChildren(axis);
  // Rows are keyed by session id and changed in place, as in the tree.
  const keep = new Set(rows.map(({ s }) => s.id));
  for (const r of el.querySelectorAll(':scope > .tl-row')) if (!keep.has(r.dataset.id)) r.remove();
  const existing = new Map([...el.querySelectorAll(':scope > .tl-row')].map((r) => [r.dataset.id, r]));
  let at = axis.nextElementSibling;
  for (const { s, depth } of rows) {
    let r = existing.get(s.id);
    if (!r) {
      r = h('div.tl-row', { dataset: { id: s.id } },
        h('div.tl-label', {}, h('span.agent'), ' ', h('span.muted')),
        h('div.tl-track', {}, h('div.tl-bar'), h('span.tl-dur')));
    }
    const [a, b] = spans.get(s.id);
    const st = store.status(s);
    const label = r.firstElementChild;
    const [bar, dur] = r.lastElementChild.children;
    label.title = s.info.title;
    label.firstElementChild.textContent = s.info.agent || '?';
    label.lastElementChild.textContent = s.info.parentID ? shortTitle(s.info) : '';
    label.style.setProperty('--depth', depth);
    bar.className = `tl-bar ${st}${critical.has(s.id) ? ' crit' : ''}`;
    bar.title = `${s.info.agent} · ${STATUS_LABEL[st]} · ${fmtDuration(b - a)} (starts at +${fmtDuration(a - t0)})`;
    bar.style.left = `${((a - t0) / total) * 100}%`;
    bar.style.width = `${Math.max(((b - a) / total) * 100, 0.4)}%`;
    dur.textContent = fmtDuration(b - a);
    dur.style.left = `calc(${((b - t0) / total) * 100}% + 6px)`;
    dur.classList.toggle('inside', (b - t0) / total > 0.85);
    r.classList.toggle('selected', s.id === selected);
    if (r !== at) el.insertBefore(r, at); else at = at.nextElementSibling;
  }
  el.onclick = (e) => {
    const r = e.target.closest('.tl-row');
    if (r) select(r.dataset.id);
  };
}

// ticks are the axis marks: about five round steps over the run.
function ticks(total) {
  const steps = [100, 200, 500, 1000, 2000, 5000, 10000, 15000, 30000, 60000, 120000, 300000, 600000, 1800000, 3600000];
  const step = steps.find((s) => total / s <= 6) || steps[steps.length - 1];
  const track = h('div.tl-track.tl-ticks');
  for (let t = 0; t <= total; t += step) {
    const tick = h('span.tl-tick', {}, t === 0 ? '0' : fmtDuration(t));
    tick.style.left = `${(t / total) * 100}%`;
    track.append(tick);
  }
  return track;
}

function criticalPath(root, spans) {
  const path = new Set([root.id]);
  for (let s = root; ;) {
    const ks = store.kids(s);
    if (!ks.length) break;
    s = ks.reduce((m, k) => (spans.get(k.id)[1] > spans.get(m.id)[1] ? k : m));
    path.add(s.id);
  }
  return path;
}
