"""HTTP out: responses, errors and the handlers of the API, the event stream and the page."""
