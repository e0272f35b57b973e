// opentool-host status page: polls GET /status.json every 2 s, follows
// GET /events (server-sent events read over fetch, so that the API key
// can go in a header) and builds a "try it" form per function from
// GET /opentool/load, calling POST /opentool/call.
//
// Everything shown comes from plugins and is untrusted: it only ever
// reaches the page as text (textContent, attribute values), never as HTML.
'use strict';

const POLL_MS = 2000;
const RATE_WINDOW_MS = 10000; // calls/s and error rate over this window
const MAX_EVENTS = 100;
const KEY_ITEM = 'opentool-host.apiKey';

// ---------- DOM helpers ----------

// el creates an element; attrs are set as properties ("class" as
// className, "data-*" and "aria-*" as attributes); children are nodes or
// strings (as text).
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k.startsWith('data-') || k.startsWith('aria-') || k === 'for') e.setAttribute(k, String(v));
    else e[k] = v;
  }
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    e.append(c instanceof Node ? c : String(c));
  }
  return e;
}

const $ = (id) => document.getElementById(id);

function fmtDuration(ms) {
  if (!(ms > 0)) return '–';
  const s = Math.floor(ms / 1000);
  if (s < 60) return s + 's';
  const m = Math.floor(s / 60);
  if (m < 60) return m + 'm ' + (s % 60) + 's';
  const h = Math.floor(m / 60);
  if (h < 24) return h + 'h ' + (m % 60) + 'm';
  return Math.floor(h / 24) + 'd ' + (h % 24) + 'h';
}

function fmtMS(v, over) {
  if (v === undefined || v === null) return '–';
  let s;
  if (v < 1) s = v.toFixed(2) + ' ms';
  else if (v < 1000) s = v.toFixed(v < 10 ? 1 : 0) + ' ms';
  else s = (v / 1000).toFixed(2) + ' s';
  return over ? '≥ ' + s : s;
}

function fmtTime(iso) {
  const d = new Date(iso);
  return isNaN(d) ? String(iso) : d.toLocaleTimeString();
}

// ---------- API key and requests ----------

function apiKey() {
  try { return sessionStorage.getItem(KEY_ITEM) || ''; } catch (e) { return ''; }
}

function setAPIKey(k) {
  try {
    if (k) sessionStorage.setItem(KEY_ITEM, k); else sessionStorage.removeItem(KEY_ITEM);
  } catch (e) { /* storage off: the key lasts for no request */ }
  if (k) keyWaiters.splice(0).forEach((f) => f());
}

// keyWaiters resolve when a key is entered.
const keyWaiters = [];
let keyPrompt = null; // the open prompt's promise, shared by every 401

// askKey opens the key dialog (once for every request that got 401) and
// resolves true when a key was entered, false when cancelled.
function askKey(why) {
  if (keyPrompt) return keyPrompt;
  const dlg = $('key-dialog');
  $('key-why').textContent = why;
  $('key-input').value = '';
  keyPrompt = new Promise((resolve) => {
    const done = (ok) => {
      $('key-form').onsubmit = null;
      $('key-cancel').onclick = null;
      dlg.oncancel = null;
      if (dlg.open) dlg.close();
      keyPrompt = null;
      resolve(ok);
    };
    $('key-form').onsubmit = (ev) => {
      ev.preventDefault();
      const k = $('key-input').value.trim();
      if (!k) return;
      setAPIKey(k);
      notice('');
      done(true);
    };
    $('key-cancel').onclick = () => done(false);
    dlg.oncancel = () => done(false);
    $('key-clear').onclick = () => { setAPIKey(''); done(false); };
    dlg.showModal();
    $('key-input').focus();
  });
  return keyPrompt;
}

function waitForKey() { return new Promise((resolve) => keyWaiters.push(resolve)); }

// api fetches path with the API key; on 401 it asks for a key and tries
// again. It returns the Response (any status but 401), or throws.
async function api(path, opts) {
  for (;;) {
    const headers = Object.assign({}, (opts && opts.headers) || {});
    const k = apiKey();
    if (k) headers.Authorization = 'Bearer ' + k;
    const resp = await fetch(path, Object.assign({}, opts, { headers, cache: 'no-store' }));
    if (resp.status !== 401) return resp;
    resp.body && resp.body.cancel().catch(() => {});
    const why = k ? 'The API key was refused; enter another.' : 'This host requires an API key.';
    if (!(await askKey(why))) {
      notice('An API key is needed to see this host. Use "API key…" to enter one.');
      await waitForKey();
    }
  }
}

function notice(text) {
  const n = $('notice');
  n.textContent = text;
  n.hidden = !text;
}

// ---------- status: plugins and functions ----------

const readings = new Map(); // function key -> [{t, calls, errors}], oldest first
const fnRows = new Map(); // function key -> {row, cells, tryRow, fn}
let pluginRows = new Map(); // plugin name -> {row, uptime, base, at, ready}
let lastFunctionSet = '';
let docs = new Map(); // function name -> OpenTool function (from /opentool/load)
let metricsOn = false;

const fnKey = (f) => f.plugin + '\u0000' + f.name;

let refreshing = false;
let refreshAgain = false;

// refreshStatus polls /status.json (one poll at a time; a call during a
// poll makes one more poll after it).
async function refreshStatus() {
  if (refreshing) {
    refreshAgain = true;
    return;
  }
  refreshing = true;
  do {
    refreshAgain = false;
    try {
      await pollStatus();
    } catch (e) {
      $('updated').textContent = 'status: ' + e.message;
    }
  } while (refreshAgain);
  refreshing = false;
}

async function pollStatus() {
  const resp = await api('/status.json');
  if (!resp.ok) {
    $('updated').textContent = 'status: HTTP ' + resp.status;
    return;
  }
  const st = await resp.json();
  $('version').textContent = st.version ? 'v' + st.version : '';
  $('updated').textContent = 'updated ' + fmtTime(st.time);
  metricsOn = !!st.metrics;
  $('metrics-note').textContent = st.metrics ? '' : '(no metrics: ' + (st.metrics_error || 'the host exports none') + ')';
  renderPlugins(st.plugins || []);
  renderLogins(st.logins || []);
  const set = (st.functions || []).map(fnKey).join('\n');
  if (set !== lastFunctionSet) {
    lastFunctionSet = set;
    await loadDocs();
  }
  renderFunctions(st.functions || [], Date.now());
}

// renderLogins shows the caller's logins (never a token): for each
// server whether a token is held, and while none is, the link of a login
// waiting for its person (http or https only) and the command.
function renderLogins(logins) {
  $('logins-card').hidden = !logins.length;
  const tbody = $('logins').tBodies[0];
  tbody.replaceChildren();
  for (const l of logins) {
    const how = el('td', {});
    if (!l.loggedIn) {
      if (/^https?:\/\//.test(l.link || '')) how.append(el('a', { href: l.link, target: '_blank', rel: 'noopener noreferrer', class: 'login-link' }, 'log in'), ' or ');
      how.append(el('code', {}, l.command || ''));
    } else {
      how.append(el('span', { class: 'muted' }, '–'));
    }
    tbody.append(el('tr', { 'data-login': l.server, 'data-logged-in': String(!!l.loggedIn) },
      el('td', { class: 'name' }, l.server),
      el('td', {}, el('span', { class: 'pill ' + (l.loggedIn ? 'state-ready' : 'state-failed') }, l.loggedIn ? 'yes' : 'needs login')),
      el('td', {}, l.loggedIn && l.expiry ? fmtTime(l.expiry) : '–'),
      el('td', {}, l.refresh ? 'yes' : 'no'),
      how));
  }
}

function renderPlugins(plugins) {
  const tbody = $('plugins').tBodies[0];
  const rows = new Map();
  const now = Date.now();
  let ready = 0;
  tbody.replaceChildren();
  for (const p of plugins) {
    if (p.state === 'ready' || p.state === 'degraded') ready++;
    const uptime = el('td', { class: 'num' }, p.pid > 0 ? fmtDuration(p.uptime_ms) : '–');
    const sha = p.sha256 ? el('span', { class: 'mono', title: p.sha256 }, p.sha256.slice(0, 12)) : '–';
    const lock = p.lock ? el('span', { class: 'pill lock-' + p.lock }, p.lock) : el('span', { class: 'muted' }, '–');
    const err = el('td', { class: 'err' });
    const refused = (p.refused || []).map(r => r.kind + ' ' + r.name + ': ' + r.reason).join('\n');
    const problem = p.last_error || (refused && 'refused ' + refused);
    if (problem) {
      const short = problem.length > 160 ? problem.slice(0, 160) + '…' : problem;
      err.append(el('span', { title: problem }, short));
    } else {
      err.append(el('span', { class: 'muted' }, '–'));
    }
    const prev = pluginRows.get(p.name);
    const row = el('tr', { 'data-plugin': p.name, 'data-state': p.state, 'data-pid': p.pid, 'data-restarts': p.restarts },
      el('td', { class: 'name' }, p.name),
      el('td', {}, el('span', { class: 'pill state-' + p.state }, p.state)),
      el('td', { class: 'num', 'data-col': 'pid' }, p.pid > 0 ? String(p.pid) : '–'),
      uptime,
      el('td', { class: 'num', 'data-col': 'restarts' }, String(p.restarts)),
      el('td', { class: 'num', title: (p.queued || 0) + ' queued' }, String(p.in_flight || 0) + (p.queued ? ' +' + p.queued : '')),
      el('td', {}, sha),
      el('td', {}, lock),
      err);
    if (prev && (prev.pid !== p.pid || prev.state !== p.state || prev.restarts !== p.restarts)) row.classList.add('flash');
    tbody.append(row);
    rows.set(p.name, { uptime, base: p.uptime_ms, at: now, running: p.pid > 0, pid: p.pid, state: p.state, restarts: p.restarts });
  }
  if (!plugins.length) tbody.append(el('tr', {}, el('td', { colSpan: 9, class: 'muted' }, 'No plugin.')));
  pluginRows = rows;
  $('plugin-summary').textContent = '(' + ready + ' of ' + plugins.length + ' ready)';
}

// tickUptimes advances the uptime cells between polls.
function tickUptimes() {
  const now = Date.now();
  for (const r of pluginRows.values()) {
    if (r.running) r.uptime.textContent = fmtDuration(r.base + (now - r.at));
  }
}

// rate returns calls/s and the error share over RATE_WINDOW_MS from the
// readings of one function, adding the reading f at time t.
function rate(key, f, t) {
  let h = readings.get(key) || [];
  const last = h[h.length - 1];
  if (last && (f.calls < last.calls || f.errors < last.errors)) h = []; // counters reset
  h.push({ t, calls: f.calls, errors: f.errors });
  while (h.length > 2 && t - h[1].t >= RATE_WINDOW_MS) h.shift();
  readings.set(key, h);
  if (h.length < 2) return null;
  const a = h[0];
  const dt = (t - a.t) / 1000;
  const dc = f.calls - a.calls;
  return { perSec: dt > 0 ? dc / dt : 0, errShare: dc > 0 ? (f.errors - a.errors) / dc : null };
}

function renderFunctions(functions, t) {
  const tbody = $('functions').tBodies[0];
  const keep = new Set();
  const order = [];
  for (const f of functions) {
    const key = fnKey(f);
    keep.add(key);
    let r = fnRows.get(key);
    if (!r) {
      r = newFunctionRow(f);
      fnRows.set(key, r);
    }
    r.fn = f;
    const rt = rate(key, f, t);
    const c = r.cells;
    if (!metricsOn) {
      for (const k of ['perSec', 'err', 'p50', 'p99', 'calls']) c[k].textContent = '–';
    } else {
      c.perSec.textContent = rt ? rt.perSec.toFixed(rt.perSec >= 10 ? 0 : 2) : '…';
      if (rt && rt.errShare !== null) {
        c.err.textContent = (rt.errShare * 100).toFixed(rt.errShare > 0 && rt.errShare < 0.1 ? 1 : 0) + ' %';
      } else {
        c.err.textContent = '–';
      }
      c.err.classList.toggle('bad', !!(rt && rt.errShare > 0));
      const outcomes = Object.entries(f.outcomes || {}).map(([k, v]) => k + ': ' + v).join(', ');
      c.err.title = 'since start: ' + f.errors + ' of ' + f.calls + ' failed' + (outcomes ? ' (' + outcomes + ')' : '');
      c.p50.textContent = fmtMS(f.p50_ms, f.p50_over);
      c.p99.textContent = fmtMS(f.p99_ms, f.p99_over);
      c.calls.textContent = String(f.calls);
    }
    order.push(r.row, r.tryRow);
  }
  for (const [key, r] of fnRows) {
    if (!keep.has(key)) {
      r.row.remove();
      r.tryRow.remove();
      fnRows.delete(key);
      readings.delete(key);
    }
  }
  // Move rows only when the order changed (moving a row would take the
  // focus out of a form being filled in).
  const now = Array.from(tbody.children).filter((n) => !n.classList.contains('empty'));
  if (now.length !== order.length || now.some((n, i) => n !== order[i])) tbody.replaceChildren(...order);
  if (!functions.length) tbody.replaceChildren(el('tr', { class: 'empty' }, el('td', { colSpan: 8, class: 'muted' }, 'No function is served.')));
}

function newFunctionRow(f) {
  const cells = {
    perSec: el('td', { class: 'num' }),
    err: el('td', { class: 'num' }),
    p50: el('td', { class: 'num' }),
    p99: el('td', { class: 'num' }),
    calls: el('td', { class: 'num' }),
  };
  const tryCell = el('td', { colSpan: 8 });
  const tryRow = el('tr', { class: 'try', 'data-try': f.name, hidden: true }, tryCell);
  const button = el('button', { type: 'button', class: 'ghost small', 'aria-expanded': 'false' }, 'try it');
  const r = { cells, tryRow, tryCell, fn: f, built: false };
  button.addEventListener('click', () => {
    const open = tryRow.hidden;
    if (open && !r.built) {
      buildTryForm(r);
      r.built = true;
    }
    tryRow.hidden = !open;
    button.setAttribute('aria-expanded', String(open));
    button.textContent = open ? 'close' : 'try it';
    if (open) {
      const first = tryCell.querySelector('input, select, textarea, button[type=submit]');
      if (first) first.focus();
    }
  });
  r.row = el('tr', { 'data-fn': f.name, 'data-fn-plugin': f.plugin },
    el('td', { class: 'name' }, f.name, f.stream ? el('span', { class: 'muted' }, ' (stream)') : null),
    el('td', {}, f.plugin),
    cells.perSec, cells.err, cells.p50, cells.p99, cells.calls,
    el('td', {}, button));
  return r;
}

async function loadDocs() {
  try {
    const resp = await api('/opentool/load');
    if (!resp.ok) return;
    const doc = await resp.json();
    const m = new Map();
    for (const f of doc.functions || []) m.set(f.name, f);
    docs = m;
    // Forms built from an older document are rebuilt when next opened.
    for (const r of fnRows.values()) {
      if (r.built && r.tryRow.hidden) {
        r.built = false;
        r.tryCell.replaceChildren();
      }
    }
  } catch (e) { /* the next poll tries again */ }
}

// ---------- try it ----------

function buildTryForm(r) {
  const fn = docs.get(r.fn.name);
  const cell = r.tryCell;
  cell.replaceChildren();
  if (r.fn.stream) {
    cell.append(el('p', { class: 'muted' }, 'A streaming function: call it with POST /opentool/streamCall.'));
    return;
  }
  const form = el('form', { class: 'try-form', 'data-fn': r.fn.name, noValidate: true });
  if (fn && fn.description) form.append(el('p', { class: 'desc' }, fn.description));
  const fields = [];
  const params = (fn && fn.parameters) || [];
  params.forEach((p, i) => {
    const schema = p.schema || {};
    const type = schema.type || 'any';
    const id = 'try-' + r.fn.name.replace(/[^A-Za-z0-9_-]/g, '_') + '-' + i;
    let input;
    if (Array.isArray(schema.enum) && schema.enum.length) {
      input = el('select', { id, name: p.name });
      input.append(el('option', { value: '' }, p.required ? '(choose)' : '(not given)'));
      schema.enum.forEach((v, j) => input.append(el('option', { value: String(j) }, JSON.stringify(v))));
    } else if (type === 'boolean') {
      input = el('select', { id, name: p.name },
        el('option', { value: '' }, p.required ? '(choose)' : '(not given)'),
        el('option', { value: 'true' }, 'true'),
        el('option', { value: 'false' }, 'false'));
    } else if (type === 'number' || type === 'integer') {
      input = el('input', { id, name: p.name, type: 'number', step: type === 'integer' ? '1' : 'any', inputMode: type === 'integer' ? 'numeric' : 'decimal' });
    } else if (type === 'string') {
      input = el('input', { id, name: p.name, type: 'text', spellcheck: false });
    } else {
      input = el('textarea', { id, name: p.name, spellcheck: false, placeholder: type === 'array' ? '[ ]' : type === 'object' ? '{ }' : 'JSON' });
    }
    const label = el('label', { for: id }, p.name,
      p.required ? el('span', { class: 'req', title: 'required' }, '*') : null,
      el('span', { class: 'type' }, type));
    const wrap = el('div', {}, input);
    const hint = p.description || schema.description;
    if (hint) wrap.append(el('span', { class: 'hint' }, hint));
    form.append(label, wrap);
    fields.push({ p, schema, type, input });
  });
  if (!params.length) form.append(el('p', { class: 'desc' }, fn ? 'No parameters.' : 'Parameters unknown (not in /opentool/load).'));
  const submit = el('button', { type: 'submit' }, 'Call ' + r.fn.name);
  const status = el('span', { class: 'muted' });
  form.append(el('div', { class: 'actions' }, submit, status));
  const out = el('pre', { class: 'result', hidden: true, 'aria-live': 'polite' });
  form.append(out);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    let args;
    try {
      args = collectArgs(fields);
    } catch (e) {
      show(out, false, e.message);
      return;
    }
    submit.disabled = true;
    status.textContent = 'calling…';
    const t0 = performance.now();
    try {
      const res = await callFunction(r.fn.name, args);
      show(out, res.ok, res.text);
    } catch (e) {
      show(out, false, 'request failed: ' + e.message);
    } finally {
      submit.disabled = false;
      status.textContent = Math.round(performance.now() - t0) + ' ms';
    }
  });
  cell.append(form);
}

function show(out, ok, text) {
  out.hidden = false;
  out.className = 'result ' + (ok ? 'ok' : 'fail');
  out.textContent = text;
}

// collectArgs reads the form's values into params; empty fields are left
// out (the host says when a required one is missing).
function collectArgs(fields) {
  const args = {};
  for (const { p, schema, type, input } of fields) {
    const raw = input.value;
    if (raw.trim() === '' && type !== 'string') continue;
    if (raw === '') continue;
    if (Array.isArray(schema.enum) && schema.enum.length) {
      args[p.name] = schema.enum[Number(raw)];
    } else if (type === 'boolean') {
      args[p.name] = raw === 'true';
    } else if (type === 'number' || type === 'integer') {
      const n = Number(raw);
      if (!isFinite(n)) throw new Error(p.name + ': not a number');
      if (type === 'integer' && !Number.isInteger(n)) throw new Error(p.name + ': not an integer');
      args[p.name] = n;
    } else if (type === 'string') {
      args[p.name] = raw;
    } else {
      try {
        args[p.name] = JSON.parse(raw);
      } catch (e) {
        throw new Error(p.name + ': not JSON: ' + e.message);
      }
    }
  }
  return args;
}

let callSeq = 0;

// callFunction posts a JSON-RPC 2.0 request to /opentool/call and returns
// {ok, text}: the result, or the error, as pretty JSON.
async function callFunction(name, args) {
  const id = 'status-page-' + (++callSeq);
  const resp = await api('/opentool/call', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', method: name, params: args, id }),
  });
  const text = await resp.text();
  let body;
  try {
    body = JSON.parse(text);
  } catch (e) {
    return { ok: false, text: 'HTTP ' + resp.status + ': ' + text };
  }
  if (body && body.error) {
    const e = body.error;
    let s = 'error ' + e.code + ': ' + e.message;
    if (e.data !== undefined) s += '\n' + JSON.stringify(e.data, null, 2);
    return { ok: false, text: s };
  }
  if (!resp.ok) return { ok: false, text: 'HTTP ' + resp.status + ': ' + text };
  return { ok: true, text: JSON.stringify(body.result, null, 2) };
}

// ---------- events ----------

let refreshTimer = null;

// refreshSoon polls /status.json shortly (once for a burst of events).
function refreshSoon() {
  if (refreshTimer) return;
  refreshTimer = setTimeout(() => {
    refreshTimer = null;
    refreshStatus();
  }, 100);
}

function setLive(on, text) {
  const live = $('live');
  live.className = 'pill ' + (on ? 'pill-ok' : 'pill-off');
  live.textContent = text || (on ? 'live' : 'reconnecting…');
  live.dataset.live = on ? 'yes' : 'no';
}

function addEvent(ev) {
  const list = $('events');
  const item = el('li', { 'data-type': ev.type, 'data-plugin': ev.plugin },
    el('span', { class: 'pill ev-' + String(ev.type).replace(/[^a-z]/g, '') }, ev.type),
    el('span', { class: 'name' }, ev.plugin),
    el('span', { class: 'time', title: ev.time }, fmtTime(ev.time)),
    ev.message ? el('span', { class: 'msg' }, ev.message) : null,
    ev.reason ? el('span', { class: 'reason' }, ev.reason) : null);
  list.prepend(item);
  while (list.children.length > MAX_EVENTS) list.lastElementChild.remove();
  $('events-empty').hidden = true;
}

// followEvents reads GET /events for as long as the page is open,
// reconnecting after the server's retry delay.
async function followEvents() {
  let retry = 2000;
  for (;;) {
    try {
      const resp = await api('/events', { headers: { Accept: 'text/event-stream' } });
      if (!resp.ok || !resp.body) throw new Error('HTTP ' + resp.status);
      setLive(true);
      refreshSoon(); // what happened while away
      const reader = resp.body.getReader();
      const dec = new TextDecoder();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true }).replace(/\r\n?/g, '\n');
        let end;
        while ((end = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, end);
          buf = buf.slice(end + 2);
          const r = dispatch(block);
          if (r) retry = r;
        }
      }
    } catch (e) {
      setLive(false, 'events: ' + e.message);
    }
    setLive(false);
    await new Promise((res) => setTimeout(res, retry));
  }
}

// dispatch handles one server-sent event block; it returns the retry
// delay when the block sets one.
function dispatch(block) {
  let type = 'message';
  const data = [];
  let retry = 0;
  for (const line of block.split('\n')) {
    if (line === '' || line.startsWith(':')) continue;
    const i = line.indexOf(':');
    const field = i < 0 ? line : line.slice(0, i);
    let value = i < 0 ? '' : line.slice(i + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') type = value;
    else if (field === 'data') data.push(value);
    else if (field === 'retry' && /^\d+$/.test(value)) retry = Number(value);
  }
  if (data.length) {
    try {
      const ev = JSON.parse(data.join('\n'));
      if (!ev.type) ev.type = type;
      addEvent(ev);
      refreshSoon();
      if (ev.type === 'ready' || ev.type === 'replaced' || ev.type === 'changed' || ev.type === 'removed') lastFunctionSet = '';
    } catch (e) { /* not an event of ours */ }
  }
  return retry;
}

// ---------- start ----------

function start() {
  $('key-button').addEventListener('click', async () => {
    if (await askKey(apiKey() ? 'Replace the API key kept for this tab.' : 'Enter the API key for this host.')) refreshStatus();
  });
  refreshStatus();
  setInterval(refreshStatus, POLL_MS);
  setInterval(tickUptimes, 1000);
  followEvents();
}

start();
