// The dashboard's own script (no inline script: the pages' CSP forbids it).
//
// A page the browser keeps in its back/forward cache would keep its event
// stream (/ui/events) open, and a browser allows six connections per host:
// after a few pages in one tab the next page would wait for a connection.
// Leaving a page closes its stream; a page shown again from the cache
// reloads, with a fresh stream and fresh data.
addEventListener("pagehide", function () {
  document.querySelectorAll("[sse-connect]").forEach(function (element) {
    // Where htmx 2 keeps an element's data, and its SSE extension the stream.
    var data = element["htmx-internal-data"];
    if (data && data.sseEventSource) {
      data.sseEventSource.close();
    }
  });
});
addEventListener("pageshow", function (event) {
  if (event.persisted) {
    location.reload();
  }
});

// A button with `data-confirm` (cancel, discard) asks before its form is sent.
document.addEventListener("submit", function (event) {
  var button = event.submitter;
  var question = button && button.getAttribute("data-confirm");
  if (question && !confirm(question)) {
    event.preventDefault();
  }
});
