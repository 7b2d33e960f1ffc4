// belfry console (issue 37): one page, hash routes, plain DOM. It runs under the /ui/ answers'
// Content-Security-Policy: no inline script or style, no eval, no other host. Every request goes to
// this node's API with the operator's token (kept in sessionStorage only) as the bearer.
'use strict';
(() => {
  const TOKEN_KEY = 'belfry.token';
  const SVGNS = 'http://www.w3.org/2000/svg';
  const JOBS_PAGE = 50;
  const $ = (id) => document.getElementById(id);
  let apiCalls = 0;
  let renderCount = 0;
  let routeSeq = 0;
  window.__belfryApiCalls = 0;

  // ---- DOM helpers

  function put(el, attrs, kids) {
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
      else if (k === 'text') el.textContent = v;
      else if (k === 'value' || k === 'checked') el[k] = v;
      else el.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of kids.flat(Infinity)) {
      if (c !== null && c !== undefined && c !== false) el.append(c instanceof Node ? c : String(c));
    }
    return el;
  }
  const fill = (el, ...kids) => { el.replaceChildren(); return put(el, null, kids); };
  const h = (tag, attrs, ...kids) => put(document.createElement(tag), attrs, kids);
  const s = (tag, attrs, ...kids) => put(document.createElementNS(SVGNS, tag), attrs, kids);
  const enc = encodeURIComponent;
  const td = (...k) => h('td', null, k);
  const btn = (id, text, attrs) => h('button', Object.assign({ id, type: 'button' }, attrs), text);
  const badge = (st, text) => h('span', { class: 'badge st-' + st }, text);
  const lab = (input, label, cls) => h('div', { class: 'field' + (cls ? ' ' + cls : '') }, h('label', { for: input.id }, label), input);

  function field(id, label, value, attrs) {
    return h('div', { class: 'field' }, h('label', { for: id }, label),
      h('input', Object.assign({ id, type: 'text', value: value || '', autocomplete: 'off', spellcheck: 'false' }, attrs)));
  }
  function table(id, heads, rows) {
    return h('table', { id },
      h('thead', null, h('tr', null, heads.map((x) => h('th', { scope: 'col' }, x)))),
      h('tbody', null, rows));
  }
  function section(id, title, ...kids) {
    return h('section', { id, class: 'panel', 'aria-labelledby': id + '-h' }, h('h2', { id: id + '-h' }, title), kids);
  }
  function onEnter(inputs, fn) {
    for (const i of inputs) i.addEventListener('keydown', (e) => { if (e.key === 'Enter') { e.preventDefault(); fn(); } });
  }

  // ---- time and words

  const pad = (n, w = 2) => String(n).padStart(w, '0');
  function fmtTime(iso) {
    if (!iso) return '—';
    const ms = iso.slice(20, 23);
    return iso.slice(0, 10) + ' ' + iso.slice(11, 19) + (ms && ms !== '000' ? '.' + ms : '') + ' UTC';
  }
  function isoOf(ms) { return new Date(ms).toISOString(); }
  function rel(iso) {
    if (!iso) return '';
    const d = (Date.parse(iso) - Date.now()) / 1000;
    const a = Math.abs(d);
    const t = a < 90 ? Math.round(a) + ' s' : a < 5400 ? Math.round(a / 60) + ' min' : a < 172800 ? Math.round(a / 3600) + ' h' : Math.round(a / 86400) + ' days';
    return d >= 0 ? 'in ' + t : t + ' ago';
  }
  function timeEl(iso) {
    return iso ? h('time', { datetime: iso, title: rel(iso) }, fmtTime(iso)) : '—';
  }
  function fmtLocal(local) { // 2027-03-07T02:30:00+01:00
    return local ? local.slice(0, 10) + ' ' + local.slice(11, 16) + ' (UTC' + local.slice(19) + ')' : '—';
  }
  function every(min) {
    if (min === 1) return 'minute';
    if (min === 1440) return 'day';
    if (min === 60) return 'hour';
    return min % 60 === 0 ? min / 60 + ' hours' : min + ' minutes';
  }
  const hhmm = (m) => pad(Math.floor(m / 60) % 24) + ':' + pad(m % 60);
  function scheduleWords(j, long) {
    let w;
    if (j.cron) {
      w = 'cron ' + j.cron + ' in ' + (j.timeZone || 'UTC');
    } else if (!j.intervalMinutes) {
      w = 'once at ' + fmtTime(j.runAt || j.scheduledFor);
      if (j.manual) w = (j.manual === 'trigger' ? 'manual trigger' : 'backfill slot') + ' of ' + j.manualOf + ', ' + w;
      if (j.retryOf) w = 'retry ' + j.attempt + ' of ' + j.retryOf + ', ' + w;
    } else {
      const i = j.intervalMinutes, o = j.offsetMinutes;
      w = i === 1 ? 'every minute' : 'every ' + every(i) + ' at offset ' + o;
      if (long && i > 1) {
        if (i <= 60) {
          const at = [];
          for (let m = o % i; m < 60; m += i) at.push(':' + pad(m));
          w += ' (at ' + at.join(', ') + ' past each hour, UTC)';
        } else {
          const at = [];
          for (let m = o; m < 1440; m += i) at.push(hhmm(m));
          w += ' (at ' + at.join(', ') + ' UTC)';
        }
      }
    }
    if (long) {
      if (j.startDateTime) w += ', from ' + fmtTime(j.startDateTime);
      if (j.endDateTime) w += ', until ' + fmtTime(j.endDateTime);
      if (j.maxFires) w += ', at most ' + j.maxFires + ' fires';
    }
    return w;
  }
  // ---- the token

  function getToken() {
    try { return sessionStorage.getItem(TOKEN_KEY) || ''; } catch (e) { return ''; }
  }
  function setToken(t) {
    try {
      if (t) sessionStorage.setItem(TOKEN_KEY, t); else sessionStorage.removeItem(TOKEN_KEY);
    } catch (e) { showMessage('error', 'This browser refused to keep the token in sessionStorage: ' + e.message); }
    showTokenStatus();
  }
  function tokenClaims(t) {
    const p = t.split('.');
    if (p.length !== 3) return null;
    try {
      const b = p[1].replace(/-/g, '+').replace(/_/g, '/');
      const bin = atob(b + '='.repeat((4 - (b.length % 4)) % 4));
      return JSON.parse(new TextDecoder().decode(Uint8Array.from(bin, (c) => c.charCodeAt(0))));
    } catch (e) { return null; }
  }
  function showTokenStatus() {
    const t = getToken();
    const el = $('token-status');
    el.className = '';
    if (!t) { el.textContent = 'No token: reads only where the node allows them, no writes.'; return; }
    const c = tokenClaims(t);
    if (c && typeof c.sub === 'string' && typeof c.exp === 'number') {
      const exp = isoOf(c.exp * 1000);
      const gone = c.exp * 1000 <= Date.now();
      el.textContent = 'Write token for ' + c.sub + (gone ? ', EXPIRED at ' : ', expires ') + fmtTime(exp);
      if (gone) el.className = 'warn';
    } else {
      el.textContent = 'Read token set (not a write token).';
    }
  }

  // ---- the API

  class ApiError extends Error {
    constructor(status, message, data, retryAfter) {
      super(message);
      this.status = status;
      this.data = data;
      this.retryAfter = retryAfter;
    }
  }
  async function api(path, opts) {
    opts = opts || {};
    const headers = { Accept: 'application/json' };
    const t = getToken();
    if (t) headers.Authorization = 'Bearer ' + t;
    let body;
    if (opts.json !== undefined) {
      headers['Content-Type'] = 'application/json';
      body = JSON.stringify(opts.json);
    }
    window.__belfryApiCalls = ++apiCalls;
    let res;
    try {
      res = await fetch(path, { method: opts.method || 'GET', headers, body, cache: 'no-store', credentials: 'omit' });
    } catch (e) {
      throw new ApiError(0, 'the node did not answer (' + e.message + ')', null, null);
    }
    const text = await res.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
    if (!res.ok && !(opts.accept || []).includes(res.status)) {
      const msg = data && typeof data.error === 'string' ? data.error : text || res.statusText || 'no answer text';
      throw new ApiError(res.status, msg, data, res.headers.get('Retry-After'));
    }
    return { status: res.status, data };
  }
  function explain(e, kind) {
    const said = 'The server says: "' + e.message + '".';
    if (!(e instanceof ApiError)) return 'The console failed: ' + e.message;
    switch (e.status) {
      case 0: return 'No answer from the node: ' + e.message;
      case 401:
        return kind === 'write'
          ? 'Write refused (HTTP 401): the write token is missing, expired or was refused. ' + said +
            ' Paste a fresh write token (belfry token --actor NAME) in the Token field above.'
          : 'Read refused (HTTP 401): this node needs a token for reading. ' + said + ' Paste one in the Token field above.';
      case 403: return 'Writes are off on this node (HTTP 403). ' + said;
      case 500:
        return 'The node failed (HTTP 500)' + (e.data && e.data.error_id ? ': its log line with error_id=' + e.data.error_id + ' has the cause.' : '.');
      case 503: return 'The node is busy or cannot reach its database (HTTP 503)' + (e.retryAfter ? '; retry in ' + e.retryAfter + ' s' : '') + '. ' + said;
      default: return 'HTTP ' + e.status + ': ' + e.message;
    }
  }

  // ---- messages

  function showMessage(kind, text) {
    const box = h('div', { class: 'msg msg-' + kind, 'data-testid': 'message', 'data-kind': kind },
      h('strong', null, kind === 'error' ? 'Error: ' : 'Note: '), h('span', { class: 'msg-text' }, text),
      h('button', { type: 'button', class: 'link', 'aria-label': 'Dismiss message', onclick: () => box.remove() }, '×'));
    $('messages').append(box);
    return box;
  }
  const showApiError = (e, kind) => showMessage('error', explain(e, kind));
  function clearMessages() { fill($('messages')); }

  function markRendered(route, ok) {
    const b = document.body.dataset;
    b.rendered = route;
    b.renderCount = String(++renderCount);
    b.renderOk = ok === false ? 'false' : 'true';
    b.apiCalls = String(apiCalls);
    performance.mark('rendered');
  }
  // A page's read: what `read` resolves to, or null when it failed (the error shown by `onError`,
  // by default as a read error, and the route marked rendered without its data) or when the
  // operator has moved to another route (seq is no longer routeSeq) meanwhile.
  async function pageRead(seq, route, read, onError) {
    try {
      const v = await read();
      return seq === routeSeq ? v : null;
    } catch (e) {
      if (seq !== routeSeq) return null;
      if (onError) onError(e); else showApiError(e, 'read');
      markRendered(route, false);
      return null;
    }
  }

  // ---- commands

  // Sends one command; shows its outcome in `out` (and an error in the message area). Returns the
  // outcome record, {status:'pending',...}, or null when it was refused before publishing.
  async function sendCommand(cmd, out, waitMs) {
    fill(out, h('span', { class: 'busy' }, 'Sending ' + cmd.op + '…'));
    out.dataset.status = 'sending';
    try {
      const r = await api('/v1/commands?wait_ms=' + (waitMs || 15000), { method: 'POST', json: cmd, accept: [422] });
      const o = r.data || {};
      const st = o.status || 'unknown';
      const facts = [];
      if (o.dryRun) facts.push('dry run');
      for (const k of ['slots', 'covered', 'matched', 'changed']) if (typeof o[k] === 'number') facts.push(k + ' ' + o[k]);
      if (st === 'pending') facts.push('published to partition ' + o.partition + ' at offset ' + o.offset + '; no outcome yet, it will be applied in order');
      out.dataset.status = st;
      fill(out, badge(st, st), ' ', cmd.op + ' ' + (cmd.selector ? 'operation ' : '') + cmd.id,
        facts.length ? ': ' + facts.join(', ') : '', o.error ? h('span', { class: 'err' }, ' — ' + o.error) : '');
      return o;
    } catch (e) {
      out.dataset.status = 'refused';
      fill(out, badge('rejected', 'refused'), ' ', explain(e, 'write'));
      showApiError(e, 'write');
      return null;
    }
  }
  // Runs fn with the buttons disabled, then enables them and calls after (which may disable some).
  function withBusy(buttons, fn, after) {
    return async () => {
      buttons.forEach((b) => { b.disabled = true; });
      try { await fn(); } finally {
        buttons.forEach((b) => { b.disabled = false; });
        if (after) after();
      }
    };
  }
  function parseLabels(text) {
    const out = {};
    const terms = text.split(/\s*,\s*(?=[A-Za-z0-9][A-Za-z0-9._/-]*=)/).map((x) => x.trim()).filter(Boolean);
    for (const t of terms) {
      const i = t.indexOf('=');
      if (i <= 0) throw new Error('a label is written key=value: "' + t + '"');
      out[t.slice(0, i)] = t.slice(i + 1);
    }
    return out;
  }
  function parseTime(text, what) {
    let t = text.trim().replace(' ', 'T');
    if (/^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?$/.test(t)) t += 'Z';
    const ms = Date.parse(t);
    if (!t || Number.isNaN(ms)) throw new Error(what + ' is not a time: write it as 2026-11-20T00:00:00Z');
    return isoOf(ms);
  }

  // ---- #/jobs

  async function jobsPage(seq, params) {
    const app = $('app');
    const q = {
      prefix: params.get('prefix') || '', owner: params.get('owner') || '', topic: params.get('topic') || '',
      labels: params.getAll('label'),
    };
    const inPrefix = field('jobs-prefix', 'Id prefix', q.prefix);
    const inOwner = field('jobs-owner', 'Owner', q.owner);
    const inTopic = field('jobs-topic', 'Topic', q.topic);
    const inLabels = field('jobs-labels', 'Labels (key=value, comma-separated)', q.labels.join(', '), { placeholder: 'carrier=acme, team=tracking' });
    const results = h('div', { id: 'jobs-results', 'aria-live': 'polite' });
    const search = () => {
      const p = new URLSearchParams();
      const v = (f) => f.querySelector('input').value.trim();
      if (v(inPrefix)) p.set('prefix', v(inPrefix));
      if (v(inOwner)) p.set('owner', v(inOwner));
      if (v(inTopic)) p.set('topic', v(inTopic));
      try {
        for (const [k, val] of Object.entries(parseLabels(v(inLabels)))) p.append('label', k + '=' + val);
      } catch (e) { clearMessages(); showMessage('error', e.message); return; }
      const hash = '#/jobs' + (p.toString() ? '?' + p : '');
      if (location.hash === hash) render(); else location.hash = hash;
    };
    onEnter([inPrefix, inOwner, inTopic, inLabels].map((f) => f.querySelector('input')), search);
    fill(app, h('h1', null, 'Jobs'),
      h('section', { class: 'panel search', role: 'search', 'aria-label': 'Find jobs' }, inPrefix, inOwner, inTopic, inLabels,
        h('div', { class: 'buttons' }, h('button', { id: 'jobs-search', type: 'button', onclick: search }, 'Search'),
          h('button', { id: 'jobs-clear', type: 'button', onclick: () => { if (location.hash === '#/jobs') render(); else location.hash = '#/jobs'; } }, 'Clear'))),
      results);

    const cursors = [null];
    const load = async () => {
      const p = new URLSearchParams();
      if (q.prefix) p.set('id_prefix', q.prefix);
      if (q.owner) p.set('owner', q.owner);
      if (q.topic) p.set('topic', q.topic);
      for (const l of q.labels) p.append('label', l);
      p.set('limit', JOBS_PAGE);
      const cur = cursors[cursors.length - 1];
      if (cur) p.set('cursor', cur);
      const r = await pageRead(seq, 'jobs', () => api('/v1/jobs?' + p), (e) => {
        showMessage('error', explain(e, 'read') + (/id_prefix/.test(e.message) ? ' (this node cannot search by id prefix yet)' : ''));
        fill(results);
      });
      if (r === null) return;
      const rows = r.data.jobs.map((j) => {
        // The server's next trigger (GET /v1/jobs gives each job's, as the job's own view does).
        const nextCell = h('td', { class: 'next' },
          j.nextTriggerAt ? h('time', { datetime: j.nextTriggerAt, title: rel(j.nextTriggerAt) }, fmtTime(j.nextTriggerAt))
            : (j.paused ? 'paused' : 'none (ended)'));
        return h('tr', { 'data-testid': 'job-row', 'data-job-id': j.id },
          td(h('a', { href: '#/jobs/' + enc(j.id), class: 'job-link' }, j.id)),
          td(j.owner || '—'),
          td(scheduleWords(j, false)),
          td(j.topic),
          h('td', j.pause && j.pause.reason ? { title: 'reason: ' + j.pause.reason } : null, j.paused ? badge('paused', 'paused') : 'no'),
          nextCell);
      });
      const nextBtn = h('button', { id: 'jobs-next', type: 'button', disabled: !r.data.next_cursor }, 'Next page');
      const prevBtn = h('button', { id: 'jobs-prev', type: 'button', disabled: cursors.length < 2 }, 'Previous page');
      nextBtn.addEventListener('click', () => { nextBtn.disabled = prevBtn.disabled = true; cursors.push(r.data.next_cursor); load(); });
      prevBtn.addEventListener('click', () => { nextBtn.disabled = prevBtn.disabled = true; cursors.pop(); load(); });
      fill(results,
        rows.length ? table('jobs-table', ['Id', 'Owner', 'Schedule', 'Topic', 'Paused', 'Next trigger'], rows)
          : h('p', { id: 'jobs-empty' }, 'No job matches.'),
        h('div', { class: 'pager' }, h('span', { id: 'jobs-page-info' }, 'Page ' + cursors.length + ': ' + rows.length + ' job' + (rows.length === 1 ? '' : 's') + (r.data.next_cursor ? ', more on the next page' : ', the last page')),
          prevBtn, nextBtn));
      markRendered('jobs');
    };
    await load();
  }

  // ---- #/jobs/<id>

  const DST_WORDS = {
    moved_from_gap: 'DST spring forward: this local time does not exist; fires at the first minute after the gap',
    merged_in_gap: 'DST spring forward: several times in the gap fire once, after it',
    first_of_repeated: 'DST fall back: this local time happens twice; fires at the first only',
    repeated: 'DST fall back: the second occurrence of a repeated local time, fires again',
  };
  const SKIP_DIFF = new Set(['updatedAt', 'createdAt']);

  // The fields that differ, as dotted paths; objects (labels, pause, details) field by field, a
  // null side counting as an empty object.
  const isObj = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
  function diff(a, b, path, out) {
    if ((isObj(a) || isObj(b)) && a !== undefined && b !== undefined && path.split('.').length < 4) {
      const x = a || {}, y = b || {};
      const keys = [...new Set([...Object.keys(x), ...Object.keys(y)])];
      if (!keys.length && JSON.stringify(a) !== JSON.stringify(b)) out.push([path, a, b]);
      for (const k of keys) diff(x[k], y[k], path ? path + '.' + k : k, out);
    } else if (JSON.stringify(a) !== JSON.stringify(b)) out.push([path, a, b]);
    return out;
  }
  function show(v) {
    if (v === undefined) return '(none)';
    const t = typeof v === 'string' ? v : JSON.stringify(v);
    return t.length > 120 ? t.slice(0, 117) + '…' : t;
  }
  function changeDiff(c) {
    if (!c.before && c.after) return [h('li', null, 'created: ' + scheduleWords(c.after, false) + ', topic ' + c.after.topic)];
    if (c.before && !c.after) return [h('li', null, 'deleted')];
    if (!c.before) return [];
    return diff(c.before, c.after, '', []).filter(([k]) => !SKIP_DIFF.has(k.split('.')[0])).map(([k, x, y]) =>
      h('li', { 'data-testid': 'audit-diff', 'data-field': k }, h('code', null, k), ': ', h('del', null, show(x)), ' → ', h('ins', null, show(y))));
  }
  function changeItem(c) {
    const d = c.detail;
    const detail = d ? (c.op === 'backfill'
      ? 'backfill of [' + fmtTime(d.from) + ', ' + fmtTime(d.to) + '): ' + d.slots + ' slot(s)' + (d.covered ? ', ' + d.covered + ' already covered' : '') + (d.ratePerMinute ? ', ' + d.ratePerMinute + ' a minute' : '')
      : 'stored ' + d.slots + ' manual fire(s)') : null;
    const diff = changeDiff(c);
    return h('li', { class: 'change', 'data-testid': 'audit-entry', 'data-op': c.op, 'data-actor': c.actor || '', 'data-change-id': c.changeId },
      h('div', { class: 'change-head' }, timeEl(c.changedAt), ' ', h('strong', { class: 'op' }, c.op), ' by ',
        h('span', { class: 'actor' }, c.actor || 'unknown actor'),
        c.bulkId ? [' (bulk operation ', h('a', { href: '#/bulk' }, c.bulkId), ')'] : ''),
      h('div', { class: 'reason' }, 'Reason: ', c.reason ? h('q', { class: 'reason-text' }, c.reason) : h('em', null, 'none given')),
      detail ? h('div', null, detail) : '',
      diff.length ? h('ul', { class: 'diff' }, diff) : (detail ? '' : h('div', { class: 'muted' }, 'no field changed')));
  }
  function dl(pairs) {
    return h('dl', { class: 'facts' }, pairs.filter((p) => p).map(([k, v, id]) => [h('dt', null, k), h('dd', id ? { id } : null, v)]));
  }
  // A "More" button that appends the next page of a keyset list.
  function moreButton(id, path, key, cursor, list, item) {
    if (!cursor) return '';
    const b = h('button', { id, type: 'button', class: 'more' }, 'Older…');
    b.addEventListener('click', async () => {
      b.disabled = true;
      try {
        const r = await api(path + '&cursor=' + enc(cursor));
        r.data[key].forEach((x) => list.append(item(x)));
        b.replaceWith(moreButton(id, path, key, r.data.next_cursor, list, item));
      } catch (e) { showApiError(e, 'read'); b.disabled = false; }
    });
    return b;
  }

  async function jobPage(seq, id) {
    const app = $('app');
    const base = '/v1/jobs/' + enc(id);
    const summary = h('div', { id: 'job-summary', class: 'panel' });
    const nextBox = h('div', { id: 'next-fires' });
    const execBox = h('div', { id: 'executions' });
    const auditBox = h('div', { id: 'audit' });
    const out = h('div', { id: 'action-outcome', role: 'status', 'aria-live': 'polite' });
    const reason = h('input', { id: 'action-reason', type: 'text', maxlength: 1024, placeholder: 'why (recorded in the audit trail)' });
    const now = Math.floor(Date.now() / 60000) * 60000;
    const from = h('input', { id: 'backfill-from', type: 'text', value: isoOf(now - 3600000), spellcheck: 'false' });
    const to = h('input', { id: 'backfill-to', type: 'text', value: isoOf(now), spellcheck: 'false' });
    const rate = h('input', { id: 'backfill-rate', type: 'number', min: 1, max: 10000, placeholder: '60' });
    const bfCount = h('span', { id: 'backfill-count', role: 'status' });
    const bPause = btn('action-pause', 'Pause'), bResume = btn('action-resume', 'Resume'), bTrigger = btn('action-trigger', 'Trigger now');
    const bDry = btn('action-backfill-dry', 'Dry run'), bFill = btn('action-backfill', 'Backfill');
    const all = [bPause, bResume, bTrigger, bDry, bFill];
    let dry = null; // the range the last dry run counted, with its count
    const rangeKey = () => from.value.trim() + '|' + to.value.trim() + '|' + rate.value;
    const syncFill = () => { bFill.disabled = !dry || dry.key !== rangeKey() || dry.slots === 0; };
    const afterCommand = async (o) => { if (o) { await loadData(); if (o.status === 'pending') setTimeout(() => { if (seq === routeSeq) loadData(); }, 2000); } };
    const cmd = (op, extra) => Object.assign({ op, id }, extra, reason.value.trim() ? { reason: reason.value.trim() } : {});
    bPause.addEventListener('click', withBusy(all, async () => { clearMessages(); await afterCommand(await sendCommand(cmd('pause'), out)); }, syncFill));
    bResume.addEventListener('click', withBusy(all, async () => { clearMessages(); await afterCommand(await sendCommand(cmd('resume'), out)); }, syncFill));
    bTrigger.addEventListener('click', withBusy(all, async () => { clearMessages(); await afterCommand(await sendCommand(cmd('trigger'), out)); }, syncFill));
    bDry.addEventListener('click', withBusy(all, async () => {
      clearMessages();
      dry = null;
      let f, t;
      try { f = parseTime(from.value, 'From'); t = parseTime(to.value, 'To'); } catch (e) { showMessage('error', e.message); return; }
      bfCount.textContent = 'Counting…';
      try {
        const r = await api(base + '/backfill?from=' + enc(f) + '&to=' + enc(t));
        dry = { key: rangeKey(), slots: r.data.slots, from: f, to: t };
        bfCount.dataset.slots = r.data.slots;
        bfCount.textContent = 'Dry run: ' + r.data.slots + ' slot(s) would fire' + (r.data.covered ? '; ' + r.data.covered + ' already covered by an earlier backfill' : '') + '.';
      } catch (e) { bfCount.textContent = explain(e, 'read'); showApiError(e, 'read'); }
    }, syncFill));
    bFill.addEventListener('click', withBusy(all, async () => {
      clearMessages();
      const extra = { from: dry.from, to: dry.to };
      if (rate.value) extra.ratePerMinute = Number(rate.value);
      dry = null;
      await afterCommand(await sendCommand(cmd('backfill', extra), out));
    }, syncFill));
    for (const i of [from, to, rate]) i.addEventListener('input', syncFill);

    fill(app, h('p', { class: 'crumbs' }, h('a', { href: '#/jobs' }, '← Jobs')),
      h('h1', null, 'Job ', h('span', { id: 'job-id', class: 'mono' }, id)),
      summary,
      section('job-actions', 'Actions',
        lab(reason, 'Reason', 'wide'),
        h('div', { class: 'buttons' }, bPause, bResume, bTrigger),
        h('fieldset', null, h('legend', null, 'Backfill: fire the slots of a past range again (UTC)'),
          lab(from, 'From'),
          lab(to, 'To (exclusive)'),
          lab(rate, 'Per minute', 'narrow'),
          h('div', { class: 'buttons' }, bDry, bFill), bfCount),
        out),
      section('next-section', 'Next fires', nextBox),
      section('exec-section', 'Last executions', execBox),
      section('audit-section', 'Audit trail', auditBox));
    syncFill();

    async function loadData() {
      const [job, next, ex, ch] = await Promise.allSettled([
        api(base), api(base + '/next?n=10'), api(base + '/executions?limit=20'), api(base + '/changes?limit=20')]);
      if (seq !== routeSeq) return;
      let ok = true;
      const failed = (r, what) => {
        if (r.status === 'fulfilled') return false;
        ok = false;
        if (!(r.reason instanceof ApiError && r.reason.status === 404)) showMessage('error', what + ': ' + explain(r.reason, 'read'));
        return true;
      };
      // The job.
      if (!failed(job, 'The job')) {
        const j = job.value.data;
        const labels = Object.entries(j.labels || {}).map(([k, v]) => k + '=' + v).join(', ');
        const lo = j.lastOutcome;
        fill(summary,
          h('p', { id: 'job-state', class: 'state' }, j.paused ? badge('paused', 'Paused') : badge('applied', 'Active'),
            ' ', h('span', { id: 'job-schedule' }, scheduleWords(j, true))),
          j.pause ? h('div', { id: 'pause-note', class: 'note warn', 'data-testid': 'pause-note' }, h('strong', null, 'Paused'),
            j.pause.since ? [' since ', timeEl(j.pause.since)] : '', ' by ', h('span', { class: 'actor' }, j.pause.actor || 'unknown actor'), ': ',
            j.pause.reason ? h('q', null, j.pause.reason) : h('em', null, 'no reason given')) : '',
          j.lastDeliveryError ? h('div', { id: 'delivery-error', class: 'note bad', 'data-testid': 'delivery-error' }, h('strong', null, 'Undeliverable trigger: '),
            'slot ', fmtTime(j.lastDeliveryError.slot), ' to topic ', h('code', null, j.lastDeliveryError.topic), ' was refused by the broker at ',
            fmtTime(j.lastDeliveryError.at), ' and dead-lettered: ', j.lastDeliveryError.error) : '',
          dl([
            ['Owner', j.owner || '—'], ['Topic', h('code', null, j.topic)], ['Key', j.key || 'the id'],
            ['Labels', labels || 'none', 'job-labels'], ['Shard', String(j.shard)], ['Priority', String(j.priority)],
            ['Next trigger', j.nextTriggerAt ? [timeEl(j.nextTriggerAt), ' (' + rel(j.nextTriggerAt) + ')'] : (j.paused ? 'none while paused' : 'none (ended)')],
            j.maxFires ? ['Fires left', (j.firesRemaining === null ? '—' : j.firesRemaining) + ' of ' + j.maxFires + (j.firesEndAt ? ', ends ' + fmtTime(j.firesEndAt) : '')] : null,
            ['Retries', j.maxRetries ? j.maxRetries + ' (backoff ' + j.retryBackoff.initialSeconds + ' s × ' + j.retryBackoff.multiplier + ', at most ' + j.retryBackoff.maxSeconds + ' s)' : 'none'],
            ['Last outcome', lo ? [badge(lo.status, lo.status), ' slot ' + fmtTime(lo.scheduledFor) + (lo.attempt ? ', attempt ' + lo.attempt : '') + (lo.error ? ': ' + lo.error : '')] : 'none reported'],
            ['Outcomes', j.totalSucceeded + ' succeeded, ' + j.totalFailed + ' failed' + (j.consecutiveFailures ? ', ' + j.consecutiveFailures + ' failures in a row' : '')],
            ['Created', timeEl(j.createdAt)], ['Updated', timeEl(j.updatedAt)],
          ]),
          h('details', null, h('summary', null, 'Job details (JSON)'), h('pre', { id: 'job-details' }, JSON.stringify(j.jobDetails, null, 2))));
      } else {
        fill(summary, h('p', { id: 'job-missing', class: 'note warn' }, job.reason.status === 404
          ? 'There is no job ' + id + ' (never created, or deleted). Its audit trail, if any, is below.' : 'The job could not be read.'));
      }
      // Next fires.
      if (!failed(next, 'Next fires')) {
        const n = next.value.data;
        const zone = n.timeZone || 'UTC';
        let prevOff = null;
        const rows = n.fires.map((f, i) => {
          const off = f.local ? f.local.slice(19) : null;
          const marks = [];
          if (f.dst) marks.push(h('span', { class: 'dst', title: DST_WORDS[f.dst] || f.dst }, '⚠ ' + f.dst.replace(/_/g, ' ')));
          if (prevOff !== null && off !== prevOff) marks.push(h('span', { class: 'dst' }, ' ⇄ UTC offset ' + prevOff + ' → ' + off));
          prevOff = off;
          return h('tr', { 'data-testid': 'next-fire', 'data-utc': f.at, 'data-dst': f.dst || '', class: marks.length ? 'dst-row' : '' },
            td(String(i + 1)), h('td', { class: 'utc mono' }, fmtTime(f.at)), h('td', { class: 'local mono' }, fmtLocal(f.local)), td(marks.length ? marks : '—'));
        });
        fill(nextBox, rows.length
          ? [h('p', null, 'The next ' + rows.length + ' fires, in UTC and in ', h('strong', { id: 'next-zone' }, zone), '. DST rules that moved a fire are marked ⚠; a change of UTC offset is marked ⇄.'),
            table('next-fires-table', ['#', 'UTC', 'Local (' + zone + ')', 'DST'], rows)]
          : h('p', { id: 'next-none' }, n.paused ? 'None: the job is paused.' : 'None: the job has ended or fired.'));
      } else fill(nextBox, h('p', { class: 'muted' }, 'Not available.'));
      // Executions.
      if (!failed(ex, 'Executions')) {
        const maxR = job.status === 'fulfilled' ? job.value.data.maxRetries : 0;
        const item = (e) => h('tr', { 'data-testid': 'execution' },
          h('td', { class: 'mono' }, fmtTime(e.scheduledFor)),
          td(e.attempt === 0 ? 'first' : 'retry ' + e.attempt + (maxR ? ' of ' + maxR : '')),
          td(badge(e.status, e.status)), td(e.error || ''),
          td(e.worker || ''), td(timeEl(e.startedAt)), td(timeEl(e.finishedAt)));
        const list = ex.value.data.executions;
        const tb = table('executions-table', ['Slot', 'Attempt', 'Outcome', 'Error', 'Worker', 'Started', 'Finished'], list.map(item));
        fill(execBox, list.length
          ? [tb, moreButton('executions-more', base + '/executions?limit=20', 'executions', ex.value.data.next_cursor, tb.tBodies[0], item)]
          : h('p', { class: 'muted' }, 'No execution reported (consumers report them on the executions topic).'));
      } else fill(execBox, h('p', { class: 'muted' }, ex.reason.status === 404 ? 'Execution history is off on this node.' : 'Not available.'));
      // Audit trail.
      if (!failed(ch, 'Audit trail')) {
        const list = h('ol', { class: 'changes', id: 'audit-list' }, ch.value.data.changes.map(changeItem));
        fill(auditBox, ch.value.data.changes.length ? [list, moreButton('audit-more', base + '/changes?limit=20', 'changes', ch.value.data.next_cursor, list, changeItem)]
          : h('p', { class: 'muted' }, 'No change recorded.'));
      }
      const gone = job.status === 'rejected';
      bPause.hidden = bResume.hidden = bTrigger.hidden = gone;
      markRendered('job', ok || (job.status === 'fulfilled'));
    }
    await loadData();
  }

  // ---- #/shards

  function shardState(x) {
    if (x.fired_through === null) return ['never', 'never fired'];
    const lag = x.lag_seconds || 0;
    if (x.debt_minutes > 0 || lag >= 60) return ['behind', 'behind'];
    if (lag >= 5 || (x.behind_minutes || 0) > 0) return ['late', 'late'];
    return ['ok', 'on time'];
  }
  const MARK = { ok: '', late: '!', behind: '!!', never: '–' };

  async function shardsPage(seq) {
    const app = $('app');
    const body = h('div', { id: 'shards-body', 'aria-live': 'polite' });
    const only = h('input', { id: 'shards-only-late', type: 'checkbox' });
    const refresh = btn('shards-refresh', 'Refresh');
    fill(app, h('h1', null, 'Shards'),
      h('div', { class: 'buttons' }, refresh, h('label', { class: 'check' }, only, ' show only shards not on time in the table')), body);
    let data = null;
    const draw = () => {
      const shards = data.shards;
      const st = shards.map(shardState);
      const count = (k) => st.filter((x) => x[0] === k).length;
      const debt = shards.reduce((a, x) => a + x.debt_minutes, 0);
      const maxLag = shards.reduce((a, x) => Math.max(a, x.lag_seconds || 0), 0);
      const late = shards.filter((x, i) => st[i][0] !== 'ok');
      const tip = (x) => 'shard ' + x.shard + ': ' + shardState(x)[1] + '; fired through ' + fmtTime(x.fired_through) +
        '; lag ' + (x.lag_seconds === null ? '—' : x.lag_seconds + ' s') + '; behind ' + (x.behind_minutes === null ? '—' : x.behind_minutes + ' min') +
        '; catch-up debt ' + x.debt_minutes + ' min' + (x.debt_node ? ' (' + x.debt_node + (x.debt_live ? ', live' : ', lease expired') + ')' : '') +
        '; claim ' + (x.claim_node ? x.claim_node + (x.claim_live ? ' (live)' : ' (expired)') : 'none');
      const grid = h('div', { id: 'shard-grid', class: 'grid', role: 'list', 'aria-label': shards.length + ' shards' },
        shards.map((x, i) => h('div', { role: 'listitem', class: 'cell s-' + st[i][0], title: tip(x), 'data-testid': 'shard-cell', 'data-shard': x.shard, 'data-state': st[i][0] },
          String(x.shard), MARK[st[i][0]] ? h('b', null, MARK[st[i][0]]) : '')));
      const rows = shards.filter((x, i) => !only.checked || st[i][0] !== 'ok').map((x) => {
        const [k, w] = shardState(x);
        return h('tr', { class: 'r-' + k, 'data-testid': 'shard-row' }, td(String(x.shard)), td(h('span', { class: 'badge s-' + k }, w)),
          h('td', { class: 'mono' }, fmtTime(x.fired_through)), h('td', { class: 'num' }, x.lag_seconds === null ? '—' : String(x.lag_seconds)),
          h('td', { class: 'num' }, x.behind_minutes === null ? '—' : String(x.behind_minutes)), h('td', { class: 'num' }, String(x.debt_minutes)),
          td(x.claim_node ? x.claim_node + (x.claim_live ? '' : ' (expired)') : '—'), td(x.debt_node ? x.debt_node + (x.debt_live ? '' : ' (expired)') : '—'));
      });
      fill(body,
        h('p', { id: 'shards-summary', class: late.length ? 'note warn' : 'note' }, shards.length + ' shards as of ' + fmtTime(data.now) + ': ' +
          count('ok') + ' on time, ' + count('late') + ' late, ' + count('behind') + ' behind, ' + count('never') + ' never fired; catch-up debt ' +
          debt + ' min; largest lag ' + maxLag + ' s' + (late.length ? '. Not on time: ' + late.slice(0, 30).map((x) => x.shard).join(', ') + (late.length > 30 ? ', …' : '') : '') + '.'),
        grid,
        h('p', { class: 'legend' }, h('span', { class: 'cell s-ok' }, 'n'), ' on time (lag < 5 s) ', h('span', { class: 'cell s-late' }, 'n!'), ' late (lag ≥ 5 s or a minute behind) ',
          h('span', { class: 'cell s-behind' }, 'n!!'), ' behind (lag ≥ 60 s or catch-up debt) ', h('span', { class: 'cell s-never' }, 'n–'), ' never fired. Hover a shard for its numbers.'),
        table('shards-table', ['Shard', 'State', 'Fired through', 'Lag (s)', 'Behind (min)', 'Debt (min)', 'Claimed by', 'Debt lease'], rows));
    };
    const load = async () => {
      const read = await pageRead(seq, 'shards', () => api('/v1/shards'));
      if (read === null) return;
      data = read.data;
      draw();
      markRendered('shards');
    };
    only.addEventListener('change', () => { if (data) draw(); });
    refresh.addEventListener('click', withBusy([refresh], async () => { clearMessages(); await load(); }));
    await load();
  }

  // ---- #/load

  function niceMax(v) {
    if (v <= 4) return 4;
    const p = Math.pow(10, Math.floor(Math.log10(v)));
    for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
    return 10 * p;
  }
  function loadChart(d) {
    const W = 960, H = 300, L = 56, R = 12, T = 22, B = 34;
    const mins = d.minutes;
    const n = mins.length;
    const max = niceMax(Math.max(...mins.map((m) => m.triggers), 1));
    const bw = (W - L - R) / n;
    const y = (v) => T + (H - T - B) * (1 - v / max);
    const svg = s('svg', { id: 'load-chart', viewBox: '0 0 ' + W + ' ' + H, role: 'img',
      'aria-label': 'Projected triggers per minute from ' + fmtTime(d.from) + ' to ' + fmtTime(d.to) + ', peak ' + d.peak.minute.triggers });
    for (let i = 0; i <= 4; i++) {
      const v = (max * i) / 4;
      svg.append(s('line', { x1: L, x2: W - R, y1: y(v), y2: y(v), class: 'gridline' }),
        s('text', { x: L - 6, y: y(v) + 4, 'text-anchor': 'end', class: 'axis' }, Number.isInteger(v) ? String(v) : v.toFixed(1)));
    }
    const step = n <= 60 ? 10 : n <= 360 ? 60 : 180;
    mins.forEach((m, i) => {
      const at = Date.parse(m.at);
      const hgt = H - B - y(m.triggers);
      const r = s('rect', { x: L + i * bw + (n <= 120 ? 0.5 : 0), y: y(m.triggers), width: n <= 120 ? Math.max(bw - 1, 0.6) : bw + 0.8, height: Math.max(hgt, 0),
        class: m.triggers === d.peak.minute.triggers && m.triggers > 0 ? 'bar peak' : 'bar', 'data-at': m.at, 'data-triggers': m.triggers },
      s('title', null, m.at.slice(11, 16) + ' UTC: ' + m.triggers + ' trigger' + (m.triggers === 1 ? '' : 's') + (m.busiestShard ? ' (busiest shard ' + m.busiestShard.shard + ': ' + m.busiestShard.triggers + ')' : '')));
      svg.append(r);
      const minute = Math.floor(at / 60000);
      if (minute % step === 0) {
        const x = L + i * bw;
        svg.append(s('line', { x1: x, x2: x, y1: H - B, y2: H - B + 5, class: 'tick' }),
          s('text', { x, y: H - B + 18, 'text-anchor': 'middle', class: 'axis' }, m.at.slice(11, 16)));
      }
    });
    svg.append(s('line', { x1: L, x2: W - R, y1: H - B, y2: H - B, class: 'axisline' }),
      s('text', { x: W - R, y: H - 2, 'text-anchor': 'end', class: 'axis' }, 'UTC'),
      s('text', { x: L + 4, y: T - 2, class: 'axis' }, 'triggers per minute'));
    return svg;
  }

  async function loadPage(seq, params) {
    const app = $('app');
    const hours = ['1', '6', '24'].includes(params.get('h')) ? Number(params.get('h')) : 1;
    // by: '', 'owner', 'topic' or 'label:<key>' (the value of one label, GET /v1/load?by=).
    const raw = params.get('by') || '';
    const by = ['owner', 'topic'].includes(raw) || /^label:.+/.test(raw) ? raw : '';
    const labelKey = by.startsWith('label:') ? by.slice(6) : '';
    const go = (hh, bb) => { location.hash = '#/load?h=' + hh + (bb ? '&by=' + encodeURIComponent(bb) : ''); };
    const bySel = h('select', { id: 'load-by' }, [['', 'total only'], ['owner', 'by owner'], ['topic', 'by topic'], ['label', 'by a label']]
      .map(([v, t]) => h('option', { value: v, selected: v === (labelKey ? 'label' : by) }, t)));
    const keyIn = h('input', { id: 'load-label-key', type: 'text', spellcheck: 'false', placeholder: 'label key, e.g. carrier', value: labelKey });
    keyIn.hidden = !labelKey;
    const byLabel = () => { if (keyIn.value.trim()) go(hours, 'label:' + keyIn.value.trim()); };
    bySel.addEventListener('change', () => {
      if (bySel.value === 'label') { keyIn.hidden = false; keyIn.focus(); byLabel(); } else go(hours, bySel.value);
    });
    keyIn.addEventListener('change', byLabel);
    const body = h('div', { id: 'load-body', 'aria-live': 'polite' });
    const refresh = btn('load-refresh', 'Refresh');
    fill(app, h('h1', null, 'Projected load'),
      h('div', { class: 'buttons', role: 'group', 'aria-label': 'Window' }, h('span', null, 'Window from the next minute:'),
        [1, 6, 24].map((x) => h('button', { id: 'load-' + x + 'h', type: 'button', 'aria-pressed': String(x === hours), onclick: () => go(x, by) }, x + ' h')),
        h('label', { for: 'load-by' }, 'Breakdown'), bySel, h('label', { for: 'load-label-key', class: 'sr-only' }, 'Label key'), keyIn, refresh),
      body);
    const load = async () => {
      const from = Math.ceil((Date.now() + 1) / 60000) * 60000;
      const p = new URLSearchParams({ from: isoOf(from), to: isoOf(from + hours * 3600000) });
      if (by) p.set('by', by);
      fill(body, h('p', { class: 'busy' }, 'Projecting ' + hours + ' h…'));
      const read = await pageRead(seq, 'load', () => api('/v1/load?' + p), (e) => { fill(body); showApiError(e, 'read'); });
      if (read === null) return;
      const d = read.data;
      const pk = d.peak;
      const mean = d.minutes.length ? Math.round((10 * d.total) / d.minutes.length) / 10 : 0;
      const top = d.top || [];
      fill(body,
        dl([['Window', fmtTime(d.from) + ' to ' + fmtTime(d.to) + ' (' + d.minutes.length + ' minutes)'], ['Total', String(d.total), 'load-total'],
          ['Mean per minute', String(mean)], ['Peak minute', pk.minute.at ? fmtTime(pk.minute.at) + ': ' + pk.minute.triggers : String(pk.minute.triggers), 'load-peak'],
          ['Busiest shard-minute', (pk.shardMinute.at ? fmtTime(pk.shardMinute.at) + ', ' : '') + 'shard ' + pk.shardMinute.shard + ': ' + pk.shardMinute.triggers],
          ['Busiest second', (pk.second.at ? fmtTime(pk.second.at) : 'second ' + pk.second.second) + ': ' + pk.second.triggers],
          ['Shards', d.shardCount + ' (tick ' + d.tickMs + ' ms)']]),
        h('figure', { class: 'chart' }, loadChart(d), h('figcaption', null, 'Triggers per minute the stored schedules will fire (hover a bar for its minute). The highest bar is the peak.')),
        by ? section('load-top', 'Most triggers by ' + (labelKey ? 'label ' + labelKey : by) + (typeof d.labels === 'number' ? ' (' + d.labels + ' fire in the window)' : ''), top.length
          ? table('load-top-table', [labelKey ? 'Label ' + labelKey : by === 'owner' ? 'Owner' : 'Topic', 'Triggers', 'Share'], top.map((t) => h('tr', null,
            td((labelKey ? t.value : by === 'owner' ? t.owner : t.topic) || '(none)'), h('td', { class: 'num' }, String(t.triggers)),
            h('td', { class: 'num' }, d.total ? ((100 * t.triggers) / d.total).toFixed(1) + ' %' : '—'))))
          : h('p', null, 'Nothing fires in this window.')) : '');
      markRendered('load');
    };
    refresh.addEventListener('click', withBusy([refresh], async () => { clearMessages(); await load(); }));
    await load();
  }

  // ---- #/bulk

  function selectorWords(sel) {
    const parts = [];
    if (sel.owner) parts.push('owner=' + sel.owner);
    for (const [k, v] of Object.entries(sel.labels || {})) parts.push(k + '=' + v);
    return parts.join(', ');
  }

  async function bulkPage(seq) {
    const app = $('app');
    const op = h('select', { id: 'bulk-op' }, ['pause', 'resume', 'trigger'].map((x) => h('option', { value: x }, x)));
    const owner = h('input', { id: 'bulk-owner', type: 'text', spellcheck: 'false' });
    const labels = h('input', { id: 'bulk-labels', type: 'text', spellcheck: 'false', placeholder: 'carrier=acme, team=tracking' });
    const reason = h('input', { id: 'bulk-reason', type: 'text', maxlength: 1024, placeholder: 'why (recorded on each job and in the audit trail)' });
    const opId = h('input', { id: 'bulk-id', type: 'text', spellcheck: 'false', placeholder: 'generated when empty' });
    const bDry = btn('bulk-dry', 'Dry run');
    const bRun = h('button', { id: 'bulk-run', type: 'button', disabled: true }, 'Run');
    const out = h('div', { id: 'bulk-outcome', role: 'status', 'aria-live': 'polite' });
    const listBox = h('div', { id: 'bulk-list' });
    const refresh = btn('bulk-refresh', 'Refresh');
    let dry = null;
    const key = () => JSON.stringify([op.value, owner.value.trim(), labels.value.trim(), reason.value.trim(), opId.value.trim()]);
    const sync = () => { bRun.disabled = !dry || dry.key !== key() || dry.matched === 0; };
    for (const i of [op, owner, labels, reason, opId]) i.addEventListener('input', sync);
    const build = (dryRun) => {
      const sel = {};
      if (owner.value.trim()) sel.owner = owner.value.trim();
      const l = parseLabels(labels.value);
      if (Object.keys(l).length) sel.labels = l;
      if (!Object.keys(sel).length) throw new Error('A bulk operation needs an owner and/or labels: it never acts on every job.');
      const stamp = new Date().toISOString().replace(/[-:]/g, '').slice(0, 15);
      const base = opId.value.trim() || 'console-' + op.value + '-' + stamp + '-' + Math.random().toString(36).slice(2, 6);
      const c = { op: op.value, id: dryRun ? base + '-dry-run' : base, selector: sel, dryRun };
      if (reason.value.trim()) c.reason = reason.value.trim();
      return c;
    };
    // A bulk outcome comes when the walk has finished: wait, then follow GET /v1/bulk-ops/{id}.
    const runBulk = async (c) => {
      let o = await sendCommand(c, out, 30000);
      for (let i = 0; o && o.status === 'pending' && i < 120 && seq === routeSeq; i++) {
        await new Promise((r) => setTimeout(r, 1000));
        try {
          const b = (await api('/v1/bulk-ops/' + enc(c.id))).data;
          if (b.state === 'finished') {
            o = { status: 'applied', matched: b.matched, changed: b.changed, dryRun: b.dryRun };
            out.dataset.status = 'applied';
            fill(out, badge('applied', 'applied'), ' ', c.op + ' operation ' + c.id + ': matched ' + b.matched + ', changed ' + b.changed);
          } else fill(out, badge('pending', 'running'), ' ' + c.id + ': matched ' + b.matched + ' so far, shard ' + b.nextShard);
        } catch (e) { if (!(e instanceof ApiError && e.status === 404)) { showApiError(e, 'read'); break; } }
      }
      return o;
    };
    bDry.addEventListener('click', withBusy([bDry, bRun], async () => {
      clearMessages();
      dry = null;
      let c;
      try { c = build(true); } catch (e) { showMessage('error', e.message); return; }
      const o = await runBulk(c);
      if (o && o.status === 'applied' && typeof o.matched === 'number') {
        dry = { key: key(), matched: o.matched };
        out.append(h('div', { id: 'bulk-dry-count', 'data-matched': o.matched },
          'Dry run: ' + o.matched + ' job(s) match; nothing changed. Press Run to ' + c.op + ' them.'));
      }
      await loadList();
    }, sync));
    bRun.addEventListener('click', withBusy([bDry, bRun], async () => {
      clearMessages();
      let c;
      try { c = build(false); } catch (e) { showMessage('error', e.message); return; }
      await runBulk(c);
      dry = null;
      await loadList();
    }, sync));
    fill(app, h('h1', null, 'Bulk operations'),
      section('bulk-form', 'Start one',
        lab(op, 'Operation', 'narrow'),
        lab(owner, 'Owner'),
        lab(labels, 'Labels (key=value, comma-separated)'),
        lab(reason, 'Reason', 'wide'),
        lab(opId, 'Operation id'),
        h('p', { class: 'muted full' }, 'Dry run first: it counts the matching jobs and changes none. Run is enabled after a dry run of the same form.'),
        h('div', { class: 'buttons' }, bDry, bRun), out),
      section('bulk-recent', 'Latest operations', h('div', { class: 'buttons' }, refresh), listBox));

    let shardCount = null;
    let polls = 0;
    async function loadList() {
      const ops = await pageRead(seq, 'bulk', async () => {
        const listed = (await api('/v1/bulk-ops?limit=50')).data.bulkOps;
        if (listed.some((b) => b.state === 'running') && shardCount === null) shardCount = (await api('/v1/shards')).data.shards.length;
        return listed;
      });
      if (ops === null) return;
      const rows = ops.map((b) => h('tr', { 'data-testid': 'bulk-row', 'data-bulk-id': b.id, 'data-state': b.state },
        h('td', { class: 'mono' }, b.id), td(b.op + (b.dryRun ? ' (dry run)' : '')), td(selectorWords(b.selector)),
        td(b.state === 'finished' ? badge('applied', 'finished')
          : [badge('pending', 'running'), ' ', h('progress', { max: shardCount || 120, value: b.nextShard, title: 'shard ' + b.nextShard + ' of ' + (shardCount || '?') }), ' shard ' + b.nextShard + (shardCount ? ' of ' + shardCount : '')]),
        h('td', { class: 'num' }, String(b.matched)), h('td', { class: 'num' }, String(b.changed)), td(b.reason || ''), td(b.actor || ''),
        td(timeEl(b.acceptedAt)), td(timeEl(b.finishedAt))));
      fill(listBox, rows.length ? table('bulk-table', ['Id', 'Operation', 'Selector', 'Progress', 'Matched', 'Changed', 'Reason', 'Actor', 'Accepted', 'Finished'], rows)
        : h('p', { class: 'muted' }, 'No bulk operation yet.'));
      markRendered('bulk');
      if (ops.some((b) => b.state === 'running') && polls++ < 60) setTimeout(() => { if (seq === routeSeq) loadList(); }, 2000);
    }
    refresh.addEventListener('click', withBusy([refresh], async () => { clearMessages(); polls = 0; await loadList(); }));
    await loadList();
  }

  // ---- routing

  function parseHash() {
    let x = location.hash.replace(/^#\/?/, '');
    let q = '';
    const qi = x.indexOf('?');
    if (qi >= 0) { q = x.slice(qi + 1); x = x.slice(0, qi); }
    const slash = x.indexOf('/');
    return { name: slash < 0 ? x : x.slice(0, slash), rest: slash < 0 ? '' : x.slice(slash + 1), params: new URLSearchParams(q) };
  }

  async function render() {
    const seq = ++routeSeq;
    clearMessages();
    const r = parseHash();
    for (const a of document.querySelectorAll('nav a')) {
      if (a.id === 'nav-' + r.name) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
    }
    const titles = { jobs: 'Jobs', shards: 'Shards', load: 'Load', bulk: 'Bulk operations' };
    try {
      if (r.name === 'jobs' && r.rest) {
        let id;
        try { id = decodeURIComponent(r.rest); } catch (e) { id = r.rest; }
        document.title = id + ' · belfry';
        await jobPage(seq, id);
        return;
      }
      if (!titles[r.name]) { location.replace('#/jobs'); return; }
      document.title = titles[r.name] + ' · belfry';
      if (r.name === 'jobs') await jobsPage(seq, r.params);
      else if (r.name === 'shards') await shardsPage(seq);
      else if (r.name === 'load') await loadPage(seq, r.params);
      else await bulkPage(seq);
    } catch (e) {
      if (seq === routeSeq) { showMessage('error', explain(e, 'read')); markRendered(r.name, false); }
    }
  }

  function init() {
    const input = $('token-input');
    const use = () => {
      const t = input.value.trim();
      if (!t) return;
      setToken(t);
      input.value = '';
      render();
    };
    $('token-save').addEventListener('click', use);
    $('token-clear').addEventListener('click', () => { setToken(''); input.value = ''; });
    onEnter([input], use);
    showTokenStatus();
    window.addEventListener('hashchange', render);
    if (!location.hash || location.hash === '#' || location.hash === '#/') history.replaceState(null, '', '#/jobs');
    render();
  }
  init();
})();
