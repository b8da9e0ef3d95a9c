"""How the claim loop finds a lease's ``renew`` (``claim_loop.renewal``: as ``getattr(lease,
"renew", None)`` would, without an AttributeError per attempt) and when a slot's send tracker has
nothing to credit between calls (``SendTracker.idle``)."""
import contextvars

from leasecheck.harness.record.numbering import SendTracker
from leasecheck.workloads.claim_loop import renewal


class Plain:
    def acquire(self): return True


class Renews(Plain):
    def renew(self): return True


class Inherits(Renews):
    pass


class OwnRenew(Plain):
    def __init__(self): self.renew = lambda: True


class Dynamic(Plain):
    def __getattr__(self, name):
        if name == "renew":
            return lambda: "dynamic"
        raise AttributeError(name)


class Optional(Plain):
    can = False

    @property
    def renew(self):
        return (lambda: True) if self.can else None


class Slotted:
    __slots__ = ("key",)


class Intercepting(Plain):
    def __getattribute__(self, name):
        if name == "renew":
            return "intercepted"
        return super().__getattribute__(name)


def test_renewal_finds_what_getattr_finds():
    for lease in (Plain(), Renews(), Inherits(), OwnRenew(), Optional(), Slotted()):
        assert renewal(lease) == getattr(lease, "renew", None), type(lease).__name__
    assert renewal(Plain()) is None and renewal(Slotted()) is None
    assert renewal(Renews())() is True and renewal(Inherits())() is True
    assert renewal(OwnRenew())() is True          # an instance's own renew counts
    assert renewal(Dynamic())() == "dynamic"      # so does one __getattr__ makes
    assert renewal(Intercepting()) == "intercepted"   # or __getattribute__
    lease = Optional()
    assert renewal(lease) is None
    lease.can = True
    assert renewal(lease)() is True               # a property is asked each attempt


def test_a_tracker_is_idle_only_with_nothing_to_drain_and_no_call_open():
    # in a context of its own: the call a thread began is a context variable, and another test's
    # tracker may have left one open in this thread's context
    contextvars.Context().run(_idle_tracker)


def _idle_tracker():
    tracker = SendTracker("w0.s0")
    assert tracker.idle()
    tracker.begin("w0.s0.0", "acquire", "job:1", 5)
    assert not tracker.idle()                     # a call is open: its drain closes it
    tracker.drain()
    assert tracker.idle()
    tracker.add(["w0.s0.c0", 0, "SET"])           # a command sent between calls
    assert not tracker.idle()
    assert tracker.drain() == [["w0.s0.c0", 0, "SET"]]
    assert tracker.idle()
