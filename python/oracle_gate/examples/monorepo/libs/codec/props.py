"""Properties of the codec: each takes one sample and raises on violation."""

from codec import decode, encode
from hypothesis import strategies as st

_TEXT = st.text(st.characters(blacklist_characters="=\n\r", blacklist_categories=("Cs",)), min_size=1)


def prop_roundtrip(record):
    assert decode(encode(record)) == record


def prop_reject_duplicate_keys(text):
    record = decode(text)
    assert encode(record) == text


prop_roundtrip.strategy = st.dictionaries(_TEXT, st.text(st.characters(blacklist_characters="\n\r", blacklist_categories=("Cs",))))
prop_reject_duplicate_keys.strategy = st.dictionaries(_TEXT, _TEXT).map(encode)
