from __future__ import annotations

import base64
import json
import random

import pytest

from webspider.frontier.packedlists import MARK, pack, unpack

DIGEST = "eb5WePbF12d_fxGzKZyY8hLueo77rrb_yaZxKClbSsA"


@pytest.mark.parametrize(
    "value",
    [
        [],
        [DIGEST, 3832, 1, 9, 1796317053, 0],
        [0, 63, 64, -1, 1, -(2**63), 2**63 - 1, -(2**31), 2**31, None],
        ["", "é", "\udcff", "x" * 127, "y" * 128, "z" * 70000],
        # base64-like strings that must come back as they were
        ["AAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAB", "A" * 17, "-_" * 8, "A" * 344],
        [DIGEST[:-1], DIGEST + "=", DIGEST.replace("_", "/"), "!" + DIGEST],
    ],
)
def test_a_packed_list_comes_back_equal_and_of_the_same_types(value):
    packed = pack(value)
    assert packed is not None
    assert packed[0] == MARK
    got = unpack(packed)
    assert got == value
    assert [type(v) for v in got] == [type(v) for v in value]


@pytest.mark.parametrize(
    "value", [[True], [1.0], [[1]], [{}], [2**63], [-(2**63) - 1], {}, "x", 1, (1,)]
)
def test_what_is_not_a_flat_list_of_ints_strings_and_nones_is_not_packed(value):
    assert pack(value) is None


def test_the_mirror_index_record_is_a_third_smaller_than_its_json():
    value = [DIGEST, 3832, 1, 9, 1796317053, 0]
    packed = pack(value)
    assert packed is not None
    assert len(packed) == 1 + 34 + 3 + 1 + 1 + 5 + 1
    assert len(json.dumps(value, separators=(",", ":"))) == 69


def test_random_lists_come_back_equal():
    rng = random.Random(7)
    for _ in range(3000):
        text = base64.urlsafe_b64encode(rng.randbytes(rng.randrange(300)))
        item = text.decode().rstrip("=")[: rng.randrange(400)]
        value = [item, rng.randrange(-(2**63), 2**63), rng.randrange(-300, 300), None]
        assert unpack(pack(value)) == value  # type: ignore[arg-type]
