(function () {
  'use strict';
  var root = document.getElementById('wp-wdt');
  if (!root || root.getAttribute('data-loaded')) return;
  root.setAttribute('data-loaded', '1');
  var token = root.getAttribute('data-token');
  var calls = [];
  var MAX = 100;

  function record(call) {
    if (/\/_(wdt|profiler)\//.test(call.url)) return;
    calls.push(call);
    if (calls.length > MAX) calls.shift();
    draw();
  }

  // Follow the page's own calls: their X-Debug-Token leads to their profiles.
  if (window.fetch) {
    var originalFetch = window.fetch;
    window.fetch = function (input, init) {
      var started = performance.now();
      var method = ((init && init.method) || (input && input.method) || 'GET').toUpperCase();
      var url = typeof input === 'string' ? input : input && input.url ? input.url : String(input);
      return originalFetch.apply(this, arguments).then(function (response) {
        record({ type: 'fetch', method: method, url: url, status: response.status, token: response.headers.get('x-debug-token'), ms: performance.now() - started });
        return response;
      }, function (error) {
        record({ type: 'fetch', method: method, url: url, status: 0, token: null, ms: performance.now() - started });
        throw error;
      });
    };
  }
  var open = XMLHttpRequest.prototype.open;
  XMLHttpRequest.prototype.open = function (method, url) {
    var xhr = this, started = 0;
    xhr.addEventListener('loadstart', function () { started = performance.now(); });
    xhr.addEventListener('loadend', function () {
      record({ type: 'xhr', method: String(method).toUpperCase(), url: String(url), status: xhr.status, token: xhr.getResponseHeader('x-debug-token'), ms: performance.now() - started });
    });
    return open.apply(this, arguments);
  };

  function cell(row, text, cls) {
    var td = document.createElement('td');
    td.textContent = text;
    if (cls) td.className = cls;
    row.appendChild(td);
    return td;
  }

  function draw() {
    var count = root.querySelector('[data-wdt-ajax-count]');
    var body = root.querySelector('[data-wdt-ajax] tbody');
    if (!count || !body) return;
    count.textContent = String(calls.length);
    var failed = calls.some(function (c) { return c.status === 0 || c.status >= 400; });
    count.className = 'wp-wdt-count' + (failed ? ' wp-wdt-bad' : '');
    body.textContent = '';
    calls.slice().reverse().forEach(function (c) {
      var tr = document.createElement('tr');
      var first = cell(tr, '');
      if (c.token) {
        var a = document.createElement('a');
        a.href = '/_profiler/' + encodeURIComponent(c.token);
        a.textContent = c.token;
        first.appendChild(a);
      } else first.textContent = '–';
      cell(tr, c.method);
      cell(tr, c.type);
      cell(tr, c.status ? String(c.status) : 'failed', c.status === 0 || c.status >= 400 ? 'wp-wdt-bad' : '');
      cell(tr, c.url, 'wp-wdt-url');
      cell(tr, Math.round(c.ms) + ' ms');
      body.appendChild(tr);
    });
  }

  function wire() {
    var KEY = 'web-profiler/toolbar';
    var hidden = false;
    try { hidden = localStorage.getItem(KEY) === 'hidden'; } catch (e) { /* storage blocked */ }
    root.classList.toggle('wp-wdt-hidden', hidden);
    root.addEventListener('click', function (e) {
      var t = e.target;
      if (!(t instanceof Element)) return;
      if (t.closest('[data-wdt-toggle]')) {
        hidden = !root.classList.contains('wp-wdt-hidden');
        root.classList.toggle('wp-wdt-hidden', hidden);
        try { localStorage.setItem(KEY, hidden ? 'hidden' : 'shown'); } catch (err) { /* ignore */ }
      }
      if (t.closest('[data-wdt-cpu]')) {
        // One-shot: the response it profiles clears it.
        document.cookie = '_wp_profile=cpu; path=/; max-age=300; samesite=strict';
        location.reload();
      }
      if (t.closest('[data-wdt-ajax-toggle]')) {
        var panel = root.querySelector('[data-wdt-ajax]');
        if (panel) panel.hidden = !panel.hidden;
      }
    });
    draw();
  }

  // A line in place of the toolbar, styled here: the toolbar's own styles come with it.
  function notice(text) {
    root.hidden = false;
    root.textContent = '';
    var bar = document.createElement('div');
    bar.className = 'wp-wdt-fail';
    bar.setAttribute('role', 'status');
    bar.style.cssText = 'background:#1f242c;color:#e8ecf1;padding:6px 12px;font:13px/1.4 system-ui,sans-serif;border-top:1px solid #3a424e';
    bar.appendChild(document.createTextNode(text + ' '));
    var a = document.createElement('a');
    a.href = '/_profiler/' + encodeURIComponent(token);
    a.textContent = 'Open the profile';
    a.style.color = '#8fb6ff';
    bar.appendChild(a);
    root.appendChild(bar);
  }

  // The profile is written just after the page's response: a 404 at first means "not yet".
  var delays = [0, 150, 400, 800, 1500];
  function load(attempt) {
    fetch('/_wdt/' + encodeURIComponent(token), { headers: { Accept: 'text/html' }, credentials: 'same-origin' }).then(function (r) {
      if (r.status === 404 && attempt + 1 < delays.length) {
        if (attempt === 0) notice('The profile of this request is still being written…');
        return setTimeout(function () { load(attempt + 1); }, delays[attempt + 1]);
      }
      if (r.status === 403) return notice('The profiler needs its key: open the link the server printed on its console once.');
      if (!r.ok) throw new Error(String(r.status));
      return r.text().then(function (html) {
        root.innerHTML = html;
        root.hidden = false;
        wire();
      });
    }).catch(function () {
      notice('The web debug toolbar could not load.');
    });
  }
  load(0);
})();
