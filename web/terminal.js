// The terminal page, /web/terminal.html?session_id=ID: xterm.js on the session's terminal
// socket, /ws/terminal (docs/API.md, "The terminal"). Binary frames are bytes (keys out,
// output in), text frames JSON control messages. Whoever may edit the task types; others
// watch. A socket that drops is opened again, and the server redraws the screen.
'use strict';

// xterm.js writes its theme and cell sizes into <style> elements, which the page's
// Content-Security-Policy refuses (no inline style). Each such element gets a constructed
// stylesheet instead, which the policy allows.
(() => {
  const create = Document.prototype.createElement;
  Document.prototype.createElement = function (tag, options) {
    const el = create.call(this, tag, options);
    if (String(tag).toLowerCase() !== 'style') {
      return el;
    }
    const sheet = new CSSStyleSheet();
    const doc = this;
    Object.defineProperty(el, 'textContent', {
      get: () => '',
      set: (text) => {
        sheet.replaceSync(text);
        if (!doc.adoptedStyleSheets.includes(sheet)) {
          doc.adoptedStyleSheets = [...doc.adoptedStyleSheets, sheet];
        }
      },
    });
    el.remove = () => {
      doc.adoptedStyleSheets = doc.adoptedStyleSheets.filter((s) => s !== sheet);
      Element.prototype.remove.call(el);
    };
    return el;
  };
})();

(() => {
  const query = new URLSearchParams(location.search);
  const id = query.get('session_id') || '';
  // ?type=TEXT is typed once, unsent, when the person may first type: an agent's sign-in
  // command line (the session page's link). Control characters are dropped, so no link
  // can press Enter: the person reads the line and runs it.
  let typeOnce = (query.get('type') || '').replace(/[\u0000-\u001f\u007f-\u009f]/g, '');
  const $ = (name) => document.getElementById(name);
  const status = $('term-status');
  const notice = $('term-notice');
  const take = $('term-take');
  const screen = $('terminal');
  $('term-back').href = '/sessions/' + encodeURIComponent(id);

  const dark = matchMedia('(prefers-color-scheme: dark)');
  const themes = {
    dark: { background: '#0b1220', foreground: '#f3f4f6', cursor: '#93c5fd', selectionBackground: '#1e3a8a' },
    light: { background: '#ffffff', foreground: '#111827', cursor: '#2563eb', selectionBackground: '#bfdbfe' },
  };
  const term = new Terminal({
    cursorBlink: true, scrollback: 5000, fontSize: 14, disableStdin: true,
    fontFamily: 'ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono", monospace',
    theme: dark.matches ? themes.dark : themes.light,
  });
  dark.addEventListener('change', () => { term.options.theme = dark.matches ? themes.dark : themes.light; });
  const fit = new FitAddon.FitAddon();
  term.loadAddon(fit);
  term.open(screen);

  let ws = null;
  let editing = false;
  let ended = false;
  let retry = 500;
  let writer = '';
  const encoder = new TextEncoder();

  const say = (text, cls) => { status.textContent = text; status.className = 'term-status' + (cls ? ' ' + cls : ''); };
  const tell = (text) => { notice.textContent = text; notice.hidden = !text; };
  const send = (data) => { if (ws && ws.readyState === WebSocket.OPEN) ws.send(data); };
  const sendSize = () => send(JSON.stringify({ type: 'resize', cols: term.cols, rows: term.rows }));
  // The writer's terminal fills its window, up to the server's bounds.
  const fitWriter = () => {
    fit.fit();
    if (term.cols > 500 || term.rows > 200) term.resize(Math.min(term.cols, 500), Math.min(term.rows, 200));
  };
  // A watcher's terminal has the writer's columns and rows, as the server draws them: it
  // fits them to its width with a smaller font (a phone), down to a legible one, past
  // which it scrolls; it never wraps the lines again.
  const fontSize = 14;
  const minFontSize = 7;
  const fitWatcher = () => {
    const drawn = screen.querySelector('.xterm-screen');
    if (editing || !drawn || !drawn.offsetWidth) return;
    const room = screen.clientWidth - 12; // .term-screen's padding
    const size = term.options.fontSize * room / drawn.offsetWidth;
    const next = Math.max(minFontSize, Math.min(fontSize, Math.floor(size * 2) / 2));
    if (next !== term.options.fontSize) term.options.fontSize = next;
  };

  const onEvent = (e) => {
    switch (e.type) {
      case 'size':
        if (!editing && (e.cols !== term.cols || e.rows !== term.rows)) term.resize(e.cols, e.rows);
        fitWatcher();
        break;
      case 'writer': {
        const was = editing;
        editing = e.editing;
        term.options.disableStdin = !editing;
        screen.classList.toggle('read-only', !editing);
        take.hidden = editing || !e.may_edit;
        if (editing) {
          say('You are typing', 'editing');
          term.options.fontSize = fontSize;
          fitWriter();
          sendSize();
          term.focus();
          if (typeOnce) { send(encoder.encode(typeOnce)); typeOnce = ''; }
        } else {
          fitWatcher();
          if (e.writer) say((e.may_edit ? '' : 'Read only · ') + e.writer + ' is typing');
          else say(e.may_edit ? 'Nobody is typing' : 'Read only');
        }
        if (was && !editing && e.writer) tell(e.writer + ' took the keyboard over. Take it back to type again.');
        else if (editing && writer !== '' && !was) tell('');
        writer = e.writer || '';
        break;
      }
      case 'end':
        ended = true;
        say('Ended');
        take.hidden = true;
        tell(e.reason + ' Reload the page to open a new terminal.');
        break;
      case 'error':
        tell(e.reason);
        break;
    }
  };

  const connect = () => {
    const scheme = location.protocol === 'https:' ? 'wss://' : 'ws://';
    ws = new WebSocket(scheme + location.host + '/ws/terminal?session_id=' + encodeURIComponent(id));
    ws.binaryType = 'arraybuffer';
    ws.onopen = () => { retry = 500; };
    ws.onmessage = (m) => {
      if (typeof m.data === 'string') onEvent(JSON.parse(m.data));
      else term.write(new Uint8Array(m.data));
    };
    ws.onclose = (c) => {
      ws = null;
      if (ended) return;
      if (c.code === 4401) { say('Signed out'); tell('Sign in again to use the terminal.'); return; }
      say('Reconnecting…');
      setTimeout(connect, retry);
      retry = Math.min(retry * 2, 5000);
    };
  };

  term.onData((d) => { if (editing) send(encoder.encode(d)); });
  term.onBinary((d) => { if (editing) send(Uint8Array.from(d, (c) => c.charCodeAt(0))); });
  term.onResize(() => { if (editing) sendSize(); });
  take.addEventListener('click', () => send(JSON.stringify({ type: 'take' })));
  addEventListener('resize', () => { if (editing) fitWriter(); else fitWatcher(); });
  fit.fit();
  connect();
})();
