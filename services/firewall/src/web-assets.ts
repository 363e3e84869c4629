// Static UI of the web component: one page, one script (served as /app.js so the CSP forbids inline script).
export const PAGE_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>task-firewall</title>
<style>
body{font-family:system-ui,sans-serif;max-width:960px;margin:1rem auto;padding:0 1rem;color:#222}
section{border:1px solid #ccc;border-radius:6px;padding:.75rem 1rem;margin:.75rem 0}
textarea{width:100%;min-height:6rem;font-family:monospace}
.pending{background:#fff4d6}.err{color:#b00020}.ok{color:#126b12}
table{border-collapse:collapse;width:100%;font-size:.9rem}td,th{border-bottom:1px solid #eee;text-align:left;padding:.2rem .4rem}
.hidden{display:none}button{margin:.25rem .25rem .25rem 0}
.banner{background:#b00020;color:#fff;font-weight:bold;padding:.75rem 1rem;border-radius:6px}
</style></head>
<body>
<h1>task-firewall</h1>
<section id="login" class="hidden"><h2>Login</h2>
<form id="login-form"><label>Password <input type="password" id="password" autocomplete="current-password" required></label>
<button type="submit">Log in</button></form><p id="login-error" class="err"></p></section>
<div id="app" class="hidden">
<p id="banner" class="banner hidden" role="alert"></p>
<section id="status"><h2>Status</h2><p id="status-text">…</p><p id="kernel-text"></p>
<p id="countdown" class="hidden"></p>
<button id="apply">Apply staged rules</button><button id="confirm" class="hidden">Confirm (keep these rules)</button>
<button id="logout">Log out</button><p id="message"></p></section>
<section><h2>Rules (staged)</h2>
<p>TCP/UDP: one port or range (8000:9000) per line, optional <code>ssh</code> flag and <code># description</code>.
Blacklist/whitelist: one IP or CIDR per line.</p>
<div id="editors"></div></section>
<section><h2>Audit log</h2><table><thead><tr><th>time</th><th>action</th><th>detail</th><th>actor</th></tr></thead><tbody id="audit"></tbody></table></section>
</div>
<script src="/app.js"></script>
</body></html>
`;

export const APP_JS = `'use strict';
let csrf = null; let deadline = null;
const $ = (id) => document.getElementById(id);
async function api(method, path, body) {
  const headers = {};
  if (method !== 'GET') { headers['content-type'] = 'application/json'; headers['x-csrf-token'] = csrf || ''; }
  const r = await fetch(path, { method, headers, body: body === undefined ? (method === 'GET' ? undefined : '{}') : JSON.stringify(body), credentials: 'same-origin' });
  const j = await r.json().catch(() => ({ success: false, error: 'bad reply' }));
  if (r.status === 401 && path !== '/api/login') { show(false); }
  return j;
}
function show(loggedIn) { $('login').classList.toggle('hidden', loggedIn); $('app').classList.toggle('hidden', !loggedIn); }
function msg(text, ok) { const m = $('message'); m.textContent = text; m.className = ok ? 'ok' : 'err'; }
const portsToText = (list) => list.map((r) => r.port + (r.ssh ? ' ssh' : '') + (r.description ? ' # ' + r.description : '')).join('\\n');
function textToPorts(t) {
  return t.split('\\n').map((l) => l.trim()).filter(Boolean).map((l) => {
    const [spec, ...d] = l.split('#'); const parts = spec.trim().split(/\\s+/);
    return { port: parts[0], ssh: parts.includes('ssh'), description: d.join('#').trim() };
  });
}
const TYPES = ['tcp', 'udp', 'blacklist', 'whitelist'];
function buildEditors() {
  const root = $('editors');
  for (const t of TYPES) {
    const div = document.createElement('div');
    const h = document.createElement('h3'); h.textContent = t; div.appendChild(h);
    const ta = document.createElement('textarea'); ta.id = 'rules-' + t; div.appendChild(ta);
    const b = document.createElement('button'); b.textContent = 'Save ' + t; b.addEventListener('click', () => save(t)); div.appendChild(b);
    root.appendChild(div);
  }
}
async function save(t) {
  const text = $('rules-' + t).value;
  const rules = t === 'tcp' || t === 'udp' ? textToPorts(text) : text.split('\\n').map((l) => l.trim()).filter(Boolean);
  const r = await api('PUT', '/api/rules/' + t, { rules });
  msg(r.success ? t + ' rules staged' : r.error, r.success); refresh();
}
async function refresh() {
  const s = await api('GET', '/api/status'); if (!s.success) return;
  const d = s.data;
  $('status-text').textContent = 'protection: ' + d.protection + ' · active: ' + d.active + ' · acceptance: ' + d.acceptance + ' · last apply: ' + (d.last_apply || 'never') + (d.staged_changes ? ' · staged changes not applied' : '');
  $('banner').textContent = d.warning || ''; $('banner').classList.toggle('hidden', !d.warning);
  const k = d.kernel;
  $('kernel-text').textContent = !k ? 'kernel: could not be read' : 'kernel: ' + (k.table ? 'table inet task_firewall present' : 'no table of ours') + (k.matches ? ', as the daemon says' : ' — DIFFERS from what the daemon applied');
  $('status').classList.toggle('pending', d.has_pending);
  $('confirm').classList.toggle('hidden', !d.has_pending);
  deadline = d.pending ? Date.now() + d.pending.remaining_seconds * 1000 : null;
  tick();
  const rules = await api('GET', '/api/rules');
  if (rules.success) for (const t of TYPES) {
    const ta = $('rules-' + t); if (document.activeElement === ta) continue;
    ta.value = t === 'tcp' || t === 'udp' ? portsToText(rules.data.staged[t]) : rules.data.staged[t].join('\\n');
  }
  const audit = await api('GET', '/api/audit?limit=50');
  if (audit.success) {
    const tb = $('audit'); tb.textContent = '';
    for (const e of audit.data.slice().reverse()) {
      const tr = document.createElement('tr');
      for (const k of ['time', 'action', 'detail', 'actor']) { const td = document.createElement('td'); td.textContent = e[k] ?? ''; tr.appendChild(td); }
      tb.appendChild(tr);
    }
  }
}
function tick() {
  const c = $('countdown');
  if (!deadline) { c.classList.add('hidden'); return; }
  const left = Math.max(0, Math.ceil((deadline - Date.now()) / 1000));
  c.classList.remove('hidden');
  c.textContent = 'Awaiting confirmation: rules roll back in ' + left + ' s unless confirmed.';
  if (left === 0) { deadline = null; setTimeout(refresh, 1500); }
}
setInterval(tick, 1000);
$('login-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const r = await api('POST', '/api/login', { password: $('password').value });
  if (!r.success) { $('login-error').textContent = r.error; return; }
  csrf = r.data.csrf_token; $('password').value = ''; show(true); refresh();
});
$('apply').addEventListener('click', async () => { const r = await api('POST', '/api/apply'); msg(r.success ? 'applied' + (r.data.has_pending ? ': confirm within the countdown' : '') : r.error, r.success); refresh(); });
$('confirm').addEventListener('click', async () => { const r = await api('POST', '/api/confirm'); msg(r.success ? 'confirmed' : r.error, r.success); refresh(); });
$('logout').addEventListener('click', async () => { await api('POST', '/api/logout'); csrf = null; show(false); });
buildEditors();
api('GET', '/api/session').then((s) => { if (s.success && s.data.authenticated) { csrf = s.data.csrf_token; show(true); refresh(); } else show(false); });
`;
