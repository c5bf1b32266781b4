"""Minimal stand-in for the `expecttest` package, which Debian does not ship
but torch.testing._internal.common_utils imports. The distributed tests run
here never use expect-tests, so only the names common_utils touches exist."""
import unittest

ACCEPT = False


class TestCase(unittest.TestCase):
    longMessage = True

    def assertExpectedInline(self, actual, expect, skip=0):  # noqa: N802 (unittest naming)
        raise NotImplementedError("expecttest stand-in: inline expect-tests are not supported")
