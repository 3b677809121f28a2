// The OpenCode API as the page uses it: JSON calls and the /event stream,
// each with the bearer token when the server asks for one (401). The
// token lives in this tab's sessionStorage only.

const TOKEN_KEY = 'agentpool.token';
let askToken = null; // set by the app: resolves when the user gave a token

export function onTokenNeeded(fn) { askToken = fn; }
export function setToken(t) { sessionStorage.setItem(TOKEN_KEY, t); }

// X-Agentpool-Client labels the answers given here (approvals) as the web
// view's rather than any OpenCode client's.
function headers(extra) {
  const h = { ...extra, 'X-Agentpool-Client': 'web' };
  const t = sessionStorage.getItem(TOKEN_KEY);
  if (t) h.Authorization = `Bearer ${t}`;
  return h;
}

// call sends one request; a 401 asks for the token and tries again.
export async function call(method, path, body) {
  for (;;) {
    const init = { method, headers: headers(body === undefined ? {} : { 'Content-Type': 'application/json' }) };
    if (body !== undefined) init.body = JSON.stringify(body);
    const res = await fetch(path, init);
    if (res.status === 401 && askToken) {
      await askToken(sessionStorage.getItem(TOKEN_KEY) ? 'That token was refused.' : '');
      continue;
    }
    if (res.status === 204) return null;
    const text = await res.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch { /* not JSON */ }
    if (!res.ok) {
      const msg = data?.data?.message || data?.message || data?.error || text || res.statusText;
      const err = new Error(`${method} ${path}: ${res.status} ${msg}`);
      err.status = res.status;
      err.reason = msg;
      throw err;
    }
    return data;
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// stream reads /event forever: onOpen after each (re)connection (the
// caller re-reads what it may have missed), onEvent per event, onState
// with 'live' | 'reconnecting'. EventSource cannot send the token, so
// the stream is read with fetch.
export async function stream({ onOpen, onEvent, onState }) {
  let backoff = 500;
  for (;;) {
    try {
      const res = await fetch('/event', { headers: headers({ Accept: 'text/event-stream' }) });
      if (res.status === 401 && askToken) {
        await askToken(sessionStorage.getItem(TOKEN_KEY) ? 'That token was refused.' : '');
        continue;
      }
      if (!res.ok || !res.body) throw new Error(`event stream: ${res.status}`);
      backoff = 500;
      onState('live');
      await onOpen();
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value.replace(/\r\n/g, '\n');
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const frame = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const data = frame.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trimStart()).join('\n');
          if (!data) continue; // a ": ping" comment
          let ev;
          try { ev = JSON.parse(data); } catch { continue; }
          try { onEvent(ev); } catch (e) { console.error('event', ev?.type, e); }
        }
      }
    } catch (e) {
      console.warn(e);
    }
    onState('reconnecting');
    await sleep(backoff);
    backoff = Math.min(backoff * 2, 8000);
  }
}
