// Conch's own page script, loaded from a file (not inline) so the Content-Security-Policy
// allows scripts from this origin only. It runs before go-app's deferred scripts.

// The update notice, said only when it is true: a controller change on a page that already
// had a controller means a new version has taken over (conchWorkerReplaced, which the
// notice requires). go-app's own "updatefound" listener is attached late and can miss an
// update, and it also fires on a first visit, when the first worker claims the page.
var conchWorkerReplaced = false;
if ("serviceWorker" in navigator) {
  const hadController = !!navigator.serviceWorker.controller;
  navigator.serviceWorker.addEventListener("controllerchange", () => {
    if (!hadController) return;
    conchWorkerReplaced = true;
    if (typeof goappOnUpdate === "function") goappOnUpdate();
  });
}

// What go-app's event handlers cannot do, done synchronously: they run after the browser's
// default action. Forms are handled in Go, so their default submission (a page load) is
// prevented; Enter in the prompt box submits it instead of adding a line.
document.addEventListener("submit", (e) => e.preventDefault(), true);
document.addEventListener("keydown", (e) => {
  if (e.target.id === "prompt-input" && e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    e.target.form.requestSubmit();
  }
}, true);

// A click before the app runs. The server-rendered page shows disclosures (a command's
// output, a tool's content, an error's whole text) whose buttons have no handler until
// app.wasm has started, seconds on a slow link; go-app then replaces the whole page. Such
// a click is kept, by the id of what the button opens (aria-controls, the same in the page
// the app renders), shown taken (the chevron turns and app.css adds "opens once loaded"),
// and made on the app's own button once the app runs: when go-app's loader is gone, at
// each change of the page until that button exists (the app renders older messages a
// frame later). A second click takes the first back; the person's first click once the
// app runs drops what was not made yet.
const conchKept = new Map(); // aria-controls → the state the person asked for ("true": open)
const conchReplay = new MutationObserver(() => {
  if (document.getElementById("app-wasm-loader")) return; // the app does not run yet
  for (const [id, want] of conchKept) {
    const button = document.querySelector(`button[aria-controls="${CSS.escape(id)}"]`);
    if (!button) continue;
    conchKept.delete(id);
    if (button.getAttribute("aria-expanded") !== want) button.click();
  }
  if (!conchKept.size) conchReplay.disconnect();
});
document.addEventListener("click", (e) => {
  if (!e.isTrusted) return; // conchReplay's own
  if (!document.getElementById("app-wasm-loader")) {
    conchKept.clear();
    conchReplay.disconnect();
    return;
  }
  const button = e.target instanceof Element && e.target.closest("button[aria-controls][aria-expanded]");
  if (!button) return;
  const want = button.getAttribute("aria-expanded") === "true" ? "false" : "true";
  button.setAttribute("aria-expanded", want);
  button.classList.toggle("kept");
  conchKept.set(button.getAttribute("aria-controls"), want);
  conchReplay.observe(document.body, {childList: true, subtree: true});
}, true);

// A session page follows its end while the person is there: whatever grows (a new message,
// an open output, the prerendered messages before the app has loaded) keeps the newest in
// view. Once the page moves away from the end, by the person (wheel, touch, keys, the
// scrollbar) or by the page (a search match or a focused control scrolled into view, find
// in page), it stays put and the root has the class "away", which shows "jump to newest";
// reaching the end again follows again. A move that comes with a change of the page's
// height, or to the very top, is layout (go-app replacing the prerendered page empties it
// for a moment, which clamps it to the top) and is undone while following. Done here, not in Go: the scroll must land in the frame of the
// growth.
document.addEventListener("DOMContentLoaded", () => {
  const root = document.documentElement;
  let following = true, moved = false, height = root.scrollHeight;
  const move = (e) => { if (!e.target.isContentEditable && !/^(INPUT|TEXTAREA|SELECT)$/.test(e.target.tagName)) moved = true; };
  for (const type of ["wheel", "touchmove", "keydown", "mousedown"]) {
    addEventListener(type, move, {passive: true, capture: true});
  }
  const toEnd = () => {
    height = root.scrollHeight;
    if (following && document.querySelector(".session-page")) window.scrollTo(0, height);
  };
  addEventListener("scroll", () => {
    const end = scrollY + innerHeight >= root.scrollHeight - 24;
    if (end || moved || (root.scrollHeight === height && scrollY > 0)) following = end;
    moved = false;
    root.classList.toggle("away", !following);
    toEnd();
  }, {passive: true});
  new ResizeObserver(toEnd).observe(document.body);
  // A page opened at a message (SessionPage.land) stays there, whatever loads around it.
  addEventListener("conch:away", () => { following = false; root.classList.add("away"); });
});

// An open output box follows its running command's output (CommandRow.follow in
// app/ui/output.go) until the person scrolls it away from its end. Whether they have is
// kept here, as the box's conchAway, from the box's own scroll events: a box measured when
// new output arrives may sit above its end because the window changed size (a shorter
// box, lines wrapped anew), and it then never followed again. A resize keeps the boxes
// that follow at their end.
const conchBoxes = ".cmd-running .transcript, .cmd-running .term";
document.addEventListener("scroll", (e) => {
  const box = e.target;
  if (box instanceof Element && box.matches(conchBoxes)) {
    box.conchAway = box.scrollHeight - box.scrollTop - box.clientHeight > 8;
  }
}, {capture: true, passive: true});
addEventListener("resize", () => {
  for (const box of document.querySelectorAll(conchBoxes)) {
    if (!box.conchAway) box.scrollTop = box.scrollHeight;
  }
});

// Web Push for the Account page (app/ui/push.go): this browser's subscription through the
// page's service worker. Each resolves to {value, error} and never rejects, so that Go
// gets the browser's reason as text.
function conchPushResult(work) {
  return work.then((value) => ({value: value || "", error: ""}),
    (err) => ({value: "", error: String((err && err.message) || err)}));
}

// How long subscribing may take: Chromium that cannot reach its push service never
// settles pushManager.subscribe, which would leave the button busy for good.
var conchPushWaitMs = 20000;
function conchPushWithin(work) {
  const late = new Promise((_, reject) => setTimeout(() => reject(new Error(
    "the browser's push service did not answer within " + conchPushWaitMs / 1000 + " s")), conchPushWaitMs));
  return Promise.race([work, late]);
}

const conchPushSupported = () => "serviceWorker" in navigator && "PushManager" in window && "Notification" in window;

// conchPushState is "unsupported", "blocked", this browser's subscription (JSON) or "".
function conchPushState() {
  return conchPushResult((async () => {
    if (!conchPushSupported()) return "unsupported";
    if (Notification.permission === "denied") return "blocked";
    const registration = await navigator.serviceWorker.ready;
    const sub = await registration.pushManager.getSubscription();
    return sub ? JSON.stringify(sub) : "";
  })());
}

// conchPushSubscribe asks for the permission, then subscribes with the server's key (a
// subscription made with another key, of an earlier database, is replaced).
function conchPushSubscribe(key) {
  return conchPushResult((async () => {
    if (!conchPushSupported()) throw new Error("this browser cannot receive notifications");
    if (await Notification.requestPermission() !== "granted") {
      throw new Error("notifications are blocked for this site");
    }
    const registration = await navigator.serviceWorker.ready;
    const options = {userVisibleOnly: true, applicationServerKey: key};
    try {
      return JSON.stringify(await conchPushWithin(registration.pushManager.subscribe(options)));
    } catch (err) {
      const old = await registration.pushManager.getSubscription();
      if (!old || err.name !== "InvalidStateError") throw err;
      await old.unsubscribe();
      return JSON.stringify(await conchPushWithin(registration.pushManager.subscribe(options)));
    }
  })());
}

// conchPushUnsubscribe ends this browser's subscription and gives its endpoint ("" when
// there was none).
function conchPushUnsubscribe() {
  return conchPushResult((async () => {
    const registration = await navigator.serviceWorker.ready;
    const sub = await registration.pushManager.getSubscription();
    if (!sub) return "";
    await sub.unsubscribe();
    return sub.endpoint;
  })());
}
