"""A request's JSON body, read strictly, for every package's routes."""
import json

from flask import current_app, request

from sandbox.spec import check_finite, check_size, too_deep


def json_body():
    """The request's JSON object, or None. Strict: JSON has no NaN or Infinity, but Python's parser
    (and so request.get_json) accepts them; one is refused here with a SpecError naming its field.
    A body nested deeper than sandbox.spec.MAX_DEPTH, or of more than REQUEST_MAX_VALUES values, is
    refused (SpecError) before anything walks it."""
    if not request.is_json:
        return None
    try:
        body = json.loads(request.get_data(cache=True))
    except RecursionError:  # nested deeper than Python's own parser goes
        raise too_deep("the request body") from None
    except ValueError:
        return None
    check_size(body, "the request body", current_app.config["REQUEST_MAX_VALUES"])
    if not isinstance(body, dict):
        return None
    check_finite(body)
    return body
