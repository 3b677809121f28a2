// Small helpers shared by the views: DOM building and number formats.

// h builds an element: h('div.a.b', {title: 'x', onclick}, child, ...).
// Text children are text nodes (never parsed as HTML).
export function h(sel, attrs, ...children) {
  const [tag, ...classes] = sel.split('.');
  const el = document.createElement(tag || 'div');
  if (classes.length) el.className = classes.join(' ');
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat(Infinity)) {
    if (c == null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

export function fmtTokens(n) {
  if (!n) return '0 tok';
  if (n < 1000) return `${n} tok`;
  if (n < 1e6) return `${(n / 1000).toFixed(n < 1e4 ? 1 : 0)}k tok`;
  return `${(n / 1e6).toFixed(1)}M tok`;
}

export function fmtCost(c) {
  if (!c) return '';
  return c < 0.01 ? `$${c.toFixed(4)}` : `$${c.toFixed(2)}`;
}

export function fmtDuration(ms) {
  if (ms < 0) ms = 0;
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(s < 10 ? 1 : 0)}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${Math.round(s % 60)}s`;
  return `${Math.floor(m / 60)}h ${m % 60}m`;
}

export const STATUS_LABEL = { running: 'running', done: 'done', error: 'failed', aborted: 'aborted', idle: 'idle' };
export const MECH_LABEL = { task: 'task', worker: 'worker', spawn: 'member', manual: 'manual' };

// statusIcon is the small status mark of a row.
export function statusIcon(st) {
  const el = h(`span.st.st-${st}`, { title: STATUS_LABEL[st] || st, 'aria-label': STATUS_LABEL[st] || st });
  el.textContent = { done: '✓', error: '✗', aborted: '⊘', idle: '○' }[st] || '';
  return el;
}

// shortTitle drops the "(@agent subagent)" suffix the server adds to a
// child's title: the row shows the agent apart.
export function shortTitle(info) {
  return (info?.title || '').replace(/\s*\(@[^)]*subagent\)$/, '');
}
