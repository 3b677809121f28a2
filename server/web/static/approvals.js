// Approval cards: a tool call waiting for a person's answer, shown in the
// transcript of the session where the tool runs, with the agent, the
// tool, its title and input (the file and the diff of an edit, the
// command of a bash call, else the input as JSON), and the three answers
// of the OpenCode API: allow once, allow always, reject (with an optional
// message the model sees). A card is one element per request, updated in
// place, so a half-typed message survives the redraws of a streaming run.
// Every text of the request is set as text, never parsed as HTML.

import * as api from './api.js';
import * as store from './store.js';
import { h } from './format.js';

const cards = new Map(); // request id -> card element

// RESULT says how a settled request ended, from this page or elsewhere.
const RESULT = {
  once: 'Allowed once', always: 'Allowed always', reject: 'Rejected',
  gone: 'No longer pending: answered elsewhere or withdrawn',
};

// approvalCard is the card of ap, made on first use; part is the tool
// part the request belongs to, when the transcript has it (its input
// shows what the request's metadata does not carry).
export function approvalCard(ap, part) {
  let card = cards.get(ap.req.id);
  if (!card) {
    card = newCard(ap, part);
    cards.set(ap.req.id, card);
  }
  updateCard(card, ap);
  return card;
}

// approvalSig changes whenever a card must be redrawn.
export const approvalSig = (ap) => (ap ? `${ap.req.id}:${ap.state}:${ap.mine}:${ap.sending}:${ap.error}` : '');

function newCard(ap, part) {
  const { req } = ap;
  const md = req.metadata || {};
  const tool = part?.tool || req.permission;
  const msg = h('input.ap-message', {
    type: 'text', 'aria-label': 'Message with a rejection (optional)',
    placeholder: 'Reject with a message for the agent (optional)', maxlength: '2000',
  });
  const send = (reply) => () => answer(ap.req.id, reply, reply === 'reject' ? msg.value.trim() : '');
  const agent = md.agent || '?';
  return h('div.approval', { role: 'group', 'aria-label': `Approval: ${md.title || tool}`, dataset: { id: req.id } },
    h('div.ap-head', {},
      h('span.ap-icon', { 'aria-hidden': 'true' }, '△'),
      h('span.ap-label', {}, 'Approval needed'),
      h('b.ap-agent', {}, `@${agent}`),
      h('span.ap-tool', {}, tool),
      h('span.ap-title', {}, md.title || (req.patterns || []).join(' '))),
    md.reason ? h('div.ap-reason', {}, `Asked because ${md.reason}.`) : null,
    inputView(req, part),
    h('div.ap-actions', {},
      h('button.primary.ap-once', { type: 'button', onclick: send('once') }, 'Allow once'),
      h('button.ap-always', { type: 'button', onclick: send('always'),
        title: `Allow this and every later ${tool} of agent ${agent} while the server runs` }, 'Allow always'),
      msg,
      h('button.danger.ap-reject', { type: 'button', onclick: send('reject') }, 'Reject')),
    h('div.ap-result', { role: 'status' }));
}

function updateCard(card, ap) {
  card.dataset.state = ap.state;
  const pending = ap.state === 'pending';
  for (const el of card.querySelectorAll('.ap-actions button, .ap-actions input')) el.disabled = !pending || ap.sending;
  card.querySelector('.ap-actions').hidden = !pending;
  card.querySelector('.ap-label').textContent = pending ? 'Approval needed' : 'Approval';
  let result = '';
  if (!pending) result = RESULT[ap.state] + (ap.state === 'gone' ? '' : ap.mine ? ' here' : ' elsewhere');
  if (ap.state === 'reject' && ap.mine && ap.message) result += `: ${ap.message}`;
  if (ap.sending) result = 'Sending…';
  const out = card.querySelector('.ap-result');
  out.textContent = result;
  out.classList.toggle('error-text', Boolean(ap.error));
  if (ap.error) out.textContent = `${result ? `${result}. ` : ''}The answer was not taken: ${ap.error}`;
}

// answer sends the user's reply; the card follows the request's state.
async function answer(id, reply, message) {
  store.answering(id, message);
  const body = { reply };
  if (message) body.message = message;
  try {
    await api.call('POST', `/permission/${encodeURIComponent(id)}/reply`, body);
    store.answered(id, '', false);
  } catch (e) {
    store.answered(id, e.reason || e.message || String(e), e.status === 404);
  }
}

// inputView is what the tool would do: the file and the diff of an edit,
// the command of a bash call, else the input as JSON.
function inputView(req, part) {
  const md = req.metadata || {};
  const input = part?.state?.input;
  const rows = [];
  if (req.permission === 'edit') {
    rows.push(h('div.kv', {}, 'File'), h('pre.ap-file', {}, md.filepath || (req.patterns || []).join('\n')));
    if (md.diff) rows.push(h('div.kv', {}, 'Change'), diffView(md.diff));
    else if (input && Object.keys(input).length) rows.push(h('div.kv', {}, 'Input'), h('pre.ap-input', {}, json(input)));
  } else if (req.permission === 'bash') {
    if (md.description) rows.push(h('div.kv', {}, 'Description'), h('div.ap-desc', {}, md.description));
    rows.push(h('div.kv', {}, 'Command'), h('pre.ap-command', {}, md.command ?? (req.patterns || []).join('\n')));
  } else {
    let shown = md.input;
    if (shown === undefined && input && Object.keys(input).length) shown = input;
    if (shown === undefined) {
      shown = {};
      for (const [k, v] of Object.entries(md)) if (!['agent', 'title', 'reason', 'sessionID'].includes(k)) shown[k] = v;
    }
    rows.push(h('div.kv', {}, 'Input'), h('pre.ap-input', {}, json(shown)));
  }
  return h('div.ap-body', {}, rows);
}

function json(v) {
  try { return JSON.stringify(v, null, 2); } catch { return String(v); }
}

// diffView colours a unified diff line by line, as text.
export function diffView(diff) {
  const lines = diff.replace(/\n$/, '').split('\n').map((l) => {
    let cls = 'ctx';
    if (/^(Index:|====|\+\+\+ |--- )/.test(l)) cls = 'file';
    else if (l.startsWith('@@')) cls = 'hunk';
    else if (l.startsWith('+')) cls = 'add';
    else if (l.startsWith('-')) cls = 'del';
    return h(`span.d-${cls}`, {}, `${l}\n`);
  });
  return h('pre.ap-diff', {}, lines);
}
