import pathlib
import unittest

from codec import decode, encode

GOLDEN = pathlib.Path(__file__).parent.parent / "testdata" / "golden.txt"


class TestCodec(unittest.TestCase):
    def test_roundtrip(self):
        record = {"b": "2", "a": "1"}
        self.assertEqual(decode(encode(record)), record)

    def test_golden_encoding(self):
        self.assertEqual(encode({"name": "gate", "level": "3"}), GOLDEN.read_text())

    def test_duplicate_key_is_rejected(self):
        with self.assertRaises(ValueError):
            decode("a=1\na=2\n")
