// The timeline of a run: one bar per session of the selected session's
// root, in tree order, from its start to its end (now while it runs),
// and on it one span per model call (an assistant message, from its
// start to its end) and per tool call (its part's start to end), from
// the times the server gives (the stored events' for a run read back);
// a delegation's span leads to its child, whose row is nested below.
// The critical path (from the root, always the child that ended last)
// is drawn solid, the other bars faded: the run's duration waited for
// the first, not for the others.

import * as store from './store.js';
import { h, fmtDuration, fmtTokens, fmtCost, shortTitle, STATUS_LABEL } from './format.js';

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
        h('div.tl-track', {}, h('div.tl-bar'), h('span.tl-dur'), h('div.tl-spans')));
    }
    const [a, b] = spans.get(s.id);
    const st = store.status(s);
    const label = r.firstElementChild;
    const [bar, dur, spansEl] = r.lastElementChild.children;
    const own = store.own(s);
    label.title = `${s.info.title} · own ${fmtTokens(own.tokens)}${own.cost ? ` ${fmtCost(own.cost)}` : ''}`;
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
    renderSpans(spansEl, s, t0, total);
    r.classList.toggle('selected', s.id === selected);
    if (r !== at) el.insertBefore(r, at); else at = at.nextElementSibling;
  }
  el.onclick = (e) => {
    const sp = e.target.closest('.tl-span[data-child]');
    if (sp) { select(sp.dataset.child); return; }
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

// MAX_SPANS bounds the spans drawn per session (a long session keeps its
// latest ones).
const MAX_SPANS = 300;

// spansOf lists a session's model and tool calls with their times.
export function spansOf(s) {
  const out = [];
  const now = store.now();
  for (const m of s.messages.values()) {
    const i = m.info;
    if (i.role !== 'assistant' || !i.time?.created) continue;
    // The model's part ends where its tool calls start to run: the
    // message itself stays open until the next response.
    let end = i.time.completed || 0;
    for (const p of m.parts.values()) {
      const t0 = p.type === 'tool' ? p.state?.time?.start : 0;
      if (t0 && t0 >= i.time.created && (!end || t0 < end)) end = t0;
    }
    const open = !end;
    const t = i.tokens ? i.tokens.input + i.tokens.output + i.tokens.reasoning : 0;
    out.push({ kind: 'model', start: i.time.created, end: open ? (s.busy ? now : i.time.created) : end,
      open: open && s.busy, label: `model call${i.modelID ? ` (${i.modelID})` : ''}${t ? ` · ${fmtTokens(t)}` : ''}${i.cost ? ` · ${fmtCost(i.cost)}` : ''}` });
    for (const p of m.parts.values()) {
      const st = p.state;
      if (p.type !== 'tool' || !st?.time?.start) continue;
      const open = !st.time.end;
      out.push({ kind: 'tool', start: st.time.start, end: open ? (s.busy ? now : st.time.start) : st.time.end, open: open && s.busy,
        status: st.status, child: st.metadata?.sessionId, label: `${p.tool}${st.title ? `: ${st.title}` : ''} · ${st.status}` });
    }
  }
  out.sort((a, b) => a.start - b.start);
  return out.length > MAX_SPANS ? out.slice(out.length - MAX_SPANS) : out;
}

function renderSpans(el, s, t0, total) {
  const list = spansOf(s);
  const want = list.map((sp) => {
    const e = h(`div.tl-span.${sp.kind}`, {
      title: `${sp.label} · ${fmtDuration(sp.end - sp.start)} (at +${fmtDuration(sp.start - t0)})`,
      dataset: sp.child ? { child: sp.child, kind: sp.kind } : { kind: sp.kind },
    });
    if (sp.open) e.classList.add('open');
    if (sp.status === 'error') e.classList.add('error');
    e.style.left = `${((sp.start - t0) / total) * 100}%`;
    e.style.width = `${Math.max(((sp.end - sp.start) / total) * 100, 0.3)}%`;
    e.dataset.start = String(sp.start);
    e.dataset.end = String(sp.end);
    return e;
  });
  el.replaceChildren(...want);
}
