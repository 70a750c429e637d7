(function () {
  'use strict';
  var KEY = 'web-profiler/theme';
  var root = document.documentElement;
  function apply(theme) {
    if (theme === 'light' || theme === 'dark') root.setAttribute('data-theme', theme);
    else root.removeAttribute('data-theme');
    var button = document.getElementById('theme-switch');
    if (button) button.textContent = 'Theme: ' + (theme || 'auto');
  }
  var saved = null;
  try { saved = localStorage.getItem(KEY); } catch (e) { /* storage blocked: follow the system */ }
  apply(saved);
  document.addEventListener('DOMContentLoaded', function () {
    apply(saved);
    var button = document.getElementById('theme-switch');
    if (button) button.addEventListener('click', function () {
      var order = [null, 'light', 'dark'];
      saved = order[(order.indexOf(saved) + 1) % order.length];
      try { if (saved) localStorage.setItem(KEY, saved); else localStorage.removeItem(KEY); } catch (e) { /* ignore */ }
      apply(saved);
    });

    // On a narrow screen the panel menu is one row that scrolls: the open panel is brought into it.
    var current = document.querySelector('.menu [aria-current]');
    if (current && current.scrollIntoView && window.matchMedia && window.matchMedia('(max-width: 820px)').matches) current.scrollIntoView({ block: 'nearest', inline: 'center' });

    // Tabs: arrow keys move between tabs, as the ARIA pattern has it.
    document.querySelectorAll('.tabs').forEach(function (tabs) {
      var list = Array.prototype.slice.call(tabs.querySelectorAll('[role="tab"]'));
      function select(tab) {
        list.forEach(function (t) {
          var on = t === tab;
          t.setAttribute('aria-selected', on ? 'true' : 'false');
          t.tabIndex = on ? 0 : -1;
          var panel = document.getElementById(t.getAttribute('aria-controls'));
          if (panel) panel.hidden = !on;
        });
      }
      // A link to a tab (?panel=request#rq-session) opens it.
      var linked = location.hash && list.filter(function (t) { return '#' + t.getAttribute('aria-controls') === location.hash; })[0];
      if (linked) select(linked);
      list.forEach(function (tab, i) {
        tab.addEventListener('click', function () { select(tab); });
        tab.addEventListener('keydown', function (e) {
          var next = e.key === 'ArrowRight' ? list[(i + 1) % list.length] : e.key === 'ArrowLeft' ? list[(i - 1 + list.length) % list.length] : null;
          if (next) { e.preventDefault(); select(next); next.focus(); }
        });
      });
    });

    document.addEventListener('click', function (e) {
      var target = e.target;
      if (!(target instanceof Element)) return;
      var copy = target.closest('[data-copy], [data-copy-from]');
      if (copy) {
        e.preventDefault();
        var done = function () { var old = copy.textContent; copy.textContent = 'Copied'; setTimeout(function () { copy.textContent = old; }, 1200); };
        var from = copy.getAttribute('data-copy-from');
        if (!navigator.clipboard) return;
        if (!from) return void navigator.clipboard.writeText(copy.getAttribute('data-copy') || '').then(done, function () {});
        // Made by the server when asked (a command for a large body is not part of every page): the
        // clipboard is promised the text at the click, as browsers ask, and filled when it comes.
        var text = fetch(from, { credentials: 'same-origin' }).then(function (r) { if (!r.ok) throw new Error(r.statusText); return r.text(); });
        if (window.ClipboardItem) navigator.clipboard.write([new ClipboardItem({ 'text/plain': text.then(function (t) { return new Blob([t], { type: 'text/plain' }); }) })]).then(done, function () {});
        else text.then(function (t) { return navigator.clipboard.writeText(t); }).then(done, function () {});
      }
    });

    // The dumps panel's search: the dumps that hold the text stay, unfolded where it is.
    var search = document.querySelector('[data-dump-search]');
    if (search) {
      search.addEventListener('input', function () {
        var q = search.value.trim().toLowerCase();
        var shown = 0;
        document.querySelectorAll('[data-dump]').forEach(function (dump) {
          var hit = !q || dump.textContent.toLowerCase().indexOf(q) >= 0;
          dump.hidden = !hit;
          if (hit) shown++;
          if (!q || !hit) return;
          dump.querySelectorAll('li, summary').forEach(function (el) {
            if (el.textContent.toLowerCase().indexOf(q) < 0) return;
            for (var d = el.parentElement; d && d !== dump; d = d.parentElement) if (d.tagName === 'DETAILS') d.open = true;
          });
        });
        var none = document.querySelector('[data-dump-none]');
        if (none) none.hidden = shown > 0;
      });
    }

    // The live list: rows from /_profiler/stream (Server-Sent Events), newest on top; paused, they wait.
    var live = document.querySelector('[data-live]');
    if (live && window.EventSource) {
      var body = live.querySelector('tbody');
      var limit = Number(live.getAttribute('data-limit')) || 50;
      var instances = live.hasAttribute('data-instances');
      var toggle = document.querySelector('[data-live-toggle]');
      var state = document.querySelector('[data-live-state]');
      var waiting = [];
      var paused = false;
      var cls = function (s) { return s >= 500 ? 's-server' : s >= 400 ? 's-client' : s >= 300 ? 's-redirect' : 's-ok'; };
      var ms = function (v) { return v >= 100 ? Math.round(v) + ' ms' : v >= 1 ? v.toFixed(1) + ' ms' : v.toFixed(2) + ' ms'; };
      var cell = function (tr, text, className) { var td = document.createElement('td'); if (className) td.className = className; td.textContent = text; tr.appendChild(td); return td; };
      var link = function (td, href, text, className) { var a = document.createElement('a'); a.href = href; a.textContent = text; if (className) a.className = className; td.textContent = ''; td.appendChild(a); };
      var add = function (p) {
        if (!/^[0-9a-f]{6,32}$/.test(p.token) || body.querySelector('tr[data-token="' + p.token + '"]')) return;
        var tr = document.createElement('tr');
        tr.setAttribute('data-token', p.token);
        tr.className = 'fresh';
        link(cell(tr, ''), '/_profiler/' + p.token, p.token, 'row-link');
        var badge = document.createElement('span');
        var command = p.type === 'command';
        badge.className = 'badge ' + (command ? (p.status === 0 ? 's-ok' : 's-server') : cls(p.status));
        badge.textContent = command ? 'exit ' + p.status : String(p.status);
        var cellOf = cell(tr, '');
        cellOf.appendChild(badge);
        var why = [[1, 'an exception'], [2, 'an error logged'], [4, 'GraphQL errors']].filter(function (w) { return (p.failed & w[0]) !== 0; }).map(function (w) { return w[1]; });
        if (why.length) {
          var flag = document.createElement('span');
          flag.className = 'flag';
          flag.textContent = '!';
          flag.title = 'Failed: ' + why.join(', ');
          flag.setAttribute('aria-label', flag.title);
          cellOf.appendChild(document.createTextNode(' '));
          cellOf.appendChild(flag);
          tr.className += ' failed-row';
        }
        cell(tr, p.method, 'mono');
        var urlCell = cell(tr, '', 'url');
        link(urlCell, '/_profiler/' + p.token, p.url);
        if (p.label) {
          var label = document.createElement('span');
          label.className = 'op-label mono';
          label.textContent = p.label;
          urlCell.appendChild(document.createTextNode(' '));
          urlCell.appendChild(label);
        }
        cell(tr, p.ip, 'mono');
        var user = cell(tr, '', 'user');
        if (p.user) link(user, '/_profiler/search?user=' + encodeURIComponent(p.user), p.user);
        if (instances) {
          var served = cell(tr, '', 'mono');
          if (p.instance) link(served, '/_profiler/search?instance=' + encodeURIComponent(p.instance), p.instance);
        }
        var time = document.createElement('time');
        time.dateTime = new Date(p.time).toISOString();
        time.textContent = 'just now';
        cell(tr, '').appendChild(time);
        cell(tr, ms(p.duration), 'mono');
        body.insertBefore(tr, body.firstChild);
        while (body.rows.length > limit) body.deleteRow(body.rows.length - 1);
        var wrap = document.querySelector('[data-live-wrap]');
        var empty = document.querySelector('[data-live-empty]');
        if (wrap) wrap.hidden = false;
        if (empty) empty.hidden = true;
      };
      var source = new EventSource(live.getAttribute('data-live'));
      source.addEventListener('profile', function (e) {
        var p;
        try { p = JSON.parse(e.data); } catch (err) { return; }
        if (paused) {
          waiting.push(p);
          state.textContent = 'Paused: ' + waiting.length + ' new request' + (waiting.length === 1 ? '' : 's') + ' waiting.';
        } else add(p);
      });
      if (toggle) toggle.addEventListener('click', function () {
        paused = !paused;
        toggle.textContent = paused ? 'Resume' : 'Pause';
        toggle.setAttribute('aria-pressed', paused ? 'true' : 'false');
        if (!paused) { waiting.splice(0).forEach(add); }
        state.textContent = paused ? 'Paused: new requests wait.' : 'Live: new requests appear at the top.';
      });
    }

    // Flame graph zoom: a frame fills the width, its callers and callees scale with it; the root zooms out.
    document.querySelectorAll('svg.flame').forEach(function (svg) {
      var total = Number(svg.getAttribute('data-total'));
      var width = Number(svg.getAttribute('data-width'));
      var frames = Array.prototype.slice.call(svg.querySelectorAll('.frame'));
      function zoom(from, span) {
        frames.forEach(function (g) {
          var x = Number(g.getAttribute('data-x'));
          var v = Number(g.getAttribute('data-v'));
          var left = Math.max(x, from), right = Math.min(x + v, from + span);
          var y = g.getAttribute('transform').replace(/^.*,/, '').replace(')', '');
          var visible = right > left;
          g.style.display = visible ? '' : 'none';
          if (!visible) return;
          var px = ((left - from) / span) * width, pw = ((right - left) / span) * width;
          g.setAttribute('transform', 'translate(' + px.toFixed(2) + ',' + y + ')');
          g.querySelector('rect').setAttribute('width', Math.max(pw - 0.5, 0.5).toFixed(2));
          var text = g.querySelector('text'), name = g.querySelector('title').textContent.replace(/ — .*$/, '');
          var room = Math.floor((pw - 8) / 6.5);
          text.textContent = pw > 40 ? (name.length > room ? name.slice(0, Math.max(room - 1, 0)) + '…' : name) : '';
        });
      }
      svg.addEventListener('click', function (e) {
        var g = e.target instanceof Element ? e.target.closest('.frame') : null;
        if (!g) return;
        var x = Number(g.getAttribute('data-x')), v = Number(g.getAttribute('data-v'));
        if (g === frames[0]) zoom(0, total); else zoom(x, v);
      });
    });

    // Log filters, by level and by logger: a row shows when both its level and its logger are checked.
    document.querySelectorAll('[data-log-filter]').forEach(function (box) {
      box.addEventListener('change', function () {
        var id = box.getAttribute('data-log-filter');
        var table = document.getElementById(id);
        if (!table) return;
        var off = { level: {}, channel: {} };
        document.querySelectorAll('[data-log-filter="' + id + '"]').forEach(function (b) {
          if (!b.checked) off[b.getAttribute('data-filter-by') || 'level'][b.value] = true;
        });
        table.querySelectorAll('tbody tr').forEach(function (row) {
          row.hidden = Boolean(off.level[row.getAttribute('data-level')] || off.channel[row.getAttribute('data-channel')]);
        });
      });
    });
  });
})();
