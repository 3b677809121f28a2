// A small Markdown reader for model text: fenced code, headings, lists,
// quotes and paragraphs; inline code, bold, italics and links. It builds
// DOM nodes, never HTML strings, so what a model writes cannot become
// markup or script; anything it does not know stays plain text.

import { h } from './format.js';

export function markdown(text) {
  const out = document.createDocumentFragment();
  const lines = text.split('\n');
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    const fence = line.match(/^\s*(```|~~~)\s*([\w+-]*)/);
    if (fence) {
      const body = [];
      for (i++; i < lines.length && !lines[i].trimStart().startsWith(fence[1]); i++) body.push(lines[i]);
      i++;
      out.append(h('pre.code', { dataset: fence[2] ? { lang: fence[2] } : null }, body.join('\n')));
      continue;
    }
    const head = line.match(/^(#{1,6})\s+(.*)$/);
    if (head) {
      out.append(h(`h${Math.min(head[1].length + 2, 6)}.md-h`, {}, inline(head[2])));
      i++;
      continue;
    }
    const item = /^\s*(?:[-*+]|\d+[.)])\s+/;
    if (item.test(line)) {
      const ordered = /^\s*\d/.test(line);
      const list = h(ordered ? 'ol' : 'ul');
      for (; i < lines.length && item.test(lines[i]); i++) list.append(h('li', {}, inline(lines[i].replace(item, ''))));
      out.append(list);
      continue;
    }
    if (/^>\s?/.test(line)) {
      const body = [];
      for (; i < lines.length && /^>\s?/.test(lines[i]); i++) body.push(lines[i].replace(/^>\s?/, ''));
      out.append(h('blockquote', {}, inline(body.join('\n'))));
      continue;
    }
    if (!line.trim()) { i++; continue; }
    const para = [];
    for (; i < lines.length && lines[i].trim() && !/^(\s*(```|~~~)|#{1,6}\s|>|\s*(?:[-*+]|\d+[.)])\s)/.test(lines[i]); i++) para.push(lines[i]);
    if (!para.length) para.push(lines[i++]);
    out.append(h('p', {}, inline(para.join('\n'))));
  }
  return out;
}

// inline reads `code`, **bold**, *italics* / _italics_ and [text](http…)
// links; the rest is text.
function inline(s) {
  const nodes = [];
  const re = /`([^`]+)`|\*\*([^*]+)\*\*|__([^_]+)__|\*([^*\s][^*]*)\*|\b_([^_]+)_\b|\[([^\]]+)\]\((https?:\/\/[^)\s]+)\)/g;
  let last = 0;
  for (let m = re.exec(s); m; m = re.exec(s)) {
    if (m.index > last) nodes.push(s.slice(last, m.index));
    if (m[1] != null) nodes.push(h('code', {}, m[1]));
    else if (m[2] != null || m[3] != null) nodes.push(h('strong', {}, m[2] ?? m[3]));
    else if (m[4] != null || m[5] != null) nodes.push(h('em', {}, m[4] ?? m[5]));
    else nodes.push(h('a', { href: m[7], target: '_blank', rel: 'noopener noreferrer' }, m[6]));
    last = re.lastIndex;
  }
  if (last < s.length) nodes.push(s.slice(last));
  return nodes;
}
