// agentctl's web page: the live parts. Everything else is plain HTML and
// works without this script: forms post and pages reload.
(function () {
  'use strict';

  function fromHTML(html) {
    var t = document.createElement('template');
    t.innerHTML = html.trim();
    return t.content.firstElementChild;
  }

  function byId(id) { return document.getElementById(id); }

  // A message at the top of the page, read out by screen readers.
  function announce(text, isError) {
    var p = byId('js-flash');
    if (!p) {
      p = document.createElement('p');
      p.id = 'js-flash';
      var main = byId('main');
      main.insertBefore(p, main.firstChild);
    }
    p.className = 'flash' + (isError ? ' flash-error' : '');
    p.setAttribute('role', isError ? 'alert' : 'status');
    p.textContent = text;
  }

  // The login URL's token leaves the address bar (and the history) before
  // the form posts it.
  function autoLogin() {
    var form = document.querySelector('form[data-autosubmit]');
    if (!form) { return false; }
    if (window.history && history.replaceState) {
      history.replaceState(null, '', '/login');
    }
    form.submit();
    return true;
  }

  function refreshEmpty() {
    var open = byId('open-questions'), earlier = byId('earlier');
    if (open && byId('no-open')) { byId('no-open').hidden = open.children.length > 0; }
    if (earlier && byId('earlier-box')) { byId('earlier-box').hidden = earlier.children.length === 0; }
  }

  // Puts a question where its status says, unless the page shows that
  // status already (a form being filled in is left alone).
  function placeQuestion(q) {
    var el = byId('q-' + q.id);
    if (el && el.getAttribute('data-status') === q.status) { return; }
    var node = fromHTML(q.html);
    if (!node) { return; }
    var open = byId('open-questions'), earlier = byId('earlier');
    if (!open || !earlier) { return; }
    var hadFocus = el && el.contains(document.activeElement);
    if (el) { el.parentNode.removeChild(el); }
    if (q.status === 'open') {
      open.appendChild(node);
    } else {
      earlier.insertBefore(node, earlier.firstChild);
      if (hadFocus) { byId('earlier-box').open = true; }
    }
    refreshEmpty();
    if (hadFocus) {
      node.setAttribute('tabindex', '-1');
      node.focus();
    }
  }

  var progressStatuses = ['running', 'blocked', 'done', 'failed'];

  function addEvent(html) {
    var list = byId('events');
    var li = fromHTML(html);
    if (!list || !li || byId(li.id)) { return; }
    li.classList.add('new');
    list.appendChild(li);
    list.scrollTop = list.scrollHeight;
    byId('no-events').hidden = true;
    var status = li.getAttribute('data-status');
    var shown = byId('inst-status');
    if (shown && progressStatuses.indexOf(status) >= 0) {
      shown.textContent = status;
      shown.className = 'status status-' + status;
    }
  }

  var maxOutput = 512 * 1024;

  function addOutput(text) {
    var pre = byId('output');
    if (!pre) { return; }
    var atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    pre.appendChild(document.createTextNode(text));
    if (pre.textContent.length > maxOutput) {
      pre.textContent = pre.textContent.slice(-maxOutput / 2);
    }
    pre.hidden = false;
    byId('no-output').hidden = true;
    if (atEnd) { pre.scrollTop = pre.scrollHeight; }
  }

  function follow(root) {
    var state = byId('live-state');
    var say = function (text) { if (state) { state.textContent = text; } };
    if (!window.EventSource) {
      say('This browser cannot follow the instance live: reload the page to see what is new.');
      return;
    }
    var base = root.getAttribute('data-live');
    var lastId = '';  // the last message's id: where a new stream goes on
    var delay = 1000; // before the next try, doubled up to 30 s
    var seen = function (e) { if (e.lastEventId) { lastId = e.lastEventId; } };
    // The stream's URL, going on after the last message seen: a new
    // EventSource sends no Last-Event-ID.
    var streamURL = function () {
      if (!lastId) { return base; }
      var u = new URL(base, window.location.href), parts = lastId.split('.');
      u.searchParams.set('after', parts[0]);
      u.searchParams.set('log', parts[1] || '0');
      return u.pathname + u.search;
    };
    var connect = function () {
      say('Connecting for live updates…');
      var es = new EventSource(streamURL());
      es.onopen = function () {
        delay = 1000;
        say('Live: new events, questions and run output appear as they come.');
      };
      es.onerror = function () {
        if (es.readyState !== EventSource.CLOSED) {
          say('Live updates paused: the server does not answer; trying again…');
          return;
        }
        // The browser gives up on an answer that is not the stream: a
        // proxy's 502 while the server restarts, a 503. Try again later,
        // unless the session has ended.
        var again = function () {
          say('Live updates paused: the server does not answer; trying again in ' + Math.round(delay / 1000) + ' s…');
          window.setTimeout(connect, delay);
          delay = Math.min(delay * 2, 30000);
        };
        if (!window.fetch || !window.AbortController) { again(); return; }
        var ctl = new AbortController();
        window.fetch(streamURL(), {credentials: 'same-origin', signal: ctl.signal}).then(function (r) {
          ctl.abort();
          if (r.status === 401) {
            say('Live updates stopped: the session ended; reload the page to log in again.');
            return;
          }
          again();
        }, again);
      };
      es.addEventListener('progress', function (e) { seen(e); addEvent(e.data); });
      es.addEventListener('output', function (e) { seen(e); addOutput(JSON.parse(e.data)); });
      es.addEventListener('output-reset', function (e) {
        seen(e);
        var pre = byId('output');
        if (pre) { pre.textContent = ''; }
      });
      es.addEventListener('question', function (e) { seen(e); placeQuestion(JSON.parse(e.data)); });
      es.addEventListener('run', function (e) {
        seen(e);
        var r = JSON.parse(e.data), cur = byId('run');
        if (cur && cur.getAttribute('data-sig') !== r.sig) {
          var node = fromHTML(r.html);
          if (node) { cur.parentNode.replaceChild(node, cur); }
        }
      });
      es.addEventListener('gone', function (e) { es.close(); say(e.data); announce(e.data, true); });
      es.addEventListener('logout', function (e) { es.close(); say(e.data); announce(e.data, true); });
    };
    connect();
  }

  // An answer form posts in the background: the page stays, the answered
  // question moves to the earlier ones.
  function onSubmit(ev) {
    var form = ev.target;
    if (!form.matches || !form.matches('form[data-answer]') || !window.fetch) { return; }
    ev.preventDefault();
    if (form.getAttribute('data-busy')) { return; } // sent already; its answer comes
    var body = new URLSearchParams();
    new FormData(form).forEach(function (v, k) { body.append(k, v); });
    var submitter = ev.submitter;
    if (submitter && submitter.name) { body.append(submitter.name, submitter.value); }
    var buttons = form.querySelectorAll('button');
    var errorBox = form.querySelector('.form-error');
    // Marked busy, not disabled: a disabled button loses the focus (to
    // the page's body), and a keyboard or screen-reader user with it.
    var busy = function (on) {
      if (on) { form.setAttribute('data-busy', '1'); } else { form.removeAttribute('data-busy'); }
      buttons.forEach(function (b) {
        if (on) { b.setAttribute('aria-disabled', 'true'); } else { b.removeAttribute('aria-disabled'); }
      });
    };
    busy(true);
    if (errorBox) { errorBox.hidden = true; }
    fetch(form.action, {
      method: 'POST', body: body, credentials: 'same-origin',
      headers: { 'Accept': 'application/json' }
    }).then(function (res) {
      return res.json().catch(function () {
        return { error: 'The server answered ' + res.status + ' ' + res.statusText + '.' };
      });
    }).then(function (data) {
      if (data.ok) {
        announce(data.message, false);
        if (data.question) { placeQuestion(data.question); }
        return;
      }
      throw new Error(data.error || 'The answer was not sent.');
    }).catch(function (err) {
      busy(false);
      var msg = err && err.message ? err.message : String(err);
      if (err instanceof TypeError) { msg = 'The server could not be reached, so the answer was not sent: try again.'; }
      if (errorBox) {
        errorBox.textContent = msg;
        errorBox.hidden = false;
      } else {
        announce(msg, true);
      }
    });
  }

  document.addEventListener('DOMContentLoaded', function () {
    if (autoLogin()) { return; }
    document.addEventListener('submit', onSubmit);
    var live = document.querySelector('[data-live]');
    if (live) { follow(live); }
  });
}());
