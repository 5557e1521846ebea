"""The dispatch seam is written once (app.dispatch.interface.Dispatcher) and both dispatches keep
it: the embedded pool and the Celery dispatch answer every method of the protocol, taking its
parameters by the same names in the same order."""
import inspect

import pytest

from app.dispatch.interface import Dispatcher
from app.dispatch.pool import Pool

PROTOCOL_METHODS = [name for name, member in vars(Dispatcher).items()
                    if inspect.isfunction(member) and not name.startswith("_")]


def implementations():
    yield Pool
    pytest.importorskip("celery")
    from app.dispatch.remote import CeleryDispatcher
    yield CeleryDispatcher


def parameters(function):
    return [p.name for p in inspect.signature(function).parameters.values()]


def test_the_protocol_names_the_whole_seam():
    assert set(PROTOCOL_METHODS) == {"start", "stop", "submit", "withdraw_client", "compile_ahead", "stop_run",
                                     "run", "health", "tritons"}


@pytest.mark.parametrize("method", PROTOCOL_METHODS)
def test_both_dispatches_keep_the_protocol(method):
    wanted = parameters(getattr(Dispatcher, method))
    for implementation in implementations():
        have = parameters(getattr(implementation, method))
        # The protocol's parameters first, in order; an implementation may take more after them.
        assert have[:len(wanted)] == wanted, f"{implementation.__name__}.{method}{tuple(have)} vs {tuple(wanted)}"
