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

// A session page arrives with its newest messages already rendered by the server: show the
// end of the chat, where the reader starts, before the app has loaded.
document.addEventListener("DOMContentLoaded", () => {
  if (document.querySelector(".session-page .messages .msg")) {
    window.scrollTo(0, document.documentElement.scrollHeight);
  }
});
