"""The README's Python blocks compile, use only names the package exports, and stay short."""

import os
import re
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "src"))

import belfry_client  # noqa: E402


class Readme(unittest.TestCase):
    def test_examples(self):
        with open(os.path.join(HERE, "..", "README.md"), encoding="utf-8") as f:
            blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
        self.assertEqual(len(blocks), 2)
        for block in blocks:
            code = compile(block, "README.md", "exec")
            for line in block.splitlines():
                m = re.match(r"from belfry_client import (.*)", line)
                for name in (m.group(1).split(",") if m else []):
                    self.assertTrue(hasattr(belfry_client, name.strip()), name)
            self.assertLessEqual(len([l for l in block.splitlines() if l.strip()]), 12)
            self.assertIsNotNone(code)


if __name__ == "__main__":
    unittest.main()
