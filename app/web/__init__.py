"""The web side as a person and an API client meet it: pages, the JSON API, Socket.IO events,
sharing, export, errors and the server's own safety. It calls down into app.dispatch and app/'s
shared modules (owners, fairness, the database, the gallery) and sees sandbox/ through its contracts;
it never imports app.course, which plugs in through the hooks it registers at start (app.web.hooks):
every run, over HTTP or Socket.IO, goes through app.web.runs.submit and those hooks."""
