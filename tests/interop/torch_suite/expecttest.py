# Stand-in for the `expecttest` package, which torch's test utilities import and Debian does
# not package. torch.testing._internal.common_utils needs only these two names; the
# distributed tests never compare against expect files.
import unittest

ACCEPT = False
TestCase = unittest.TestCase
