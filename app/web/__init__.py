"""The web side as a person and an API client meet it: pages, the JSON API, Socket.IO events,
sharing, export, errors and the server's own safety. Imports sandbox's contracts only."""
