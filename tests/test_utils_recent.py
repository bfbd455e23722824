from webspider.utils.recent import Recent


def read(recent, keys, store, asked):
    """What a feature does: the remembered values, the rest read from store."""
    out, at, missing = recent.lookup(keys)
    asked.extend(missing)
    if missing:
        recent.fill(out, at, missing, [store.get(key) for key in missing])
    return out


def test_a_key_is_read_once_then_remembered_with_its_absence():
    recent = Recent(4)
    store = {"a": 1}
    asked = []
    assert read(recent, ["a", "b", "a"], store, asked) == [1, None, 1]
    assert asked == ["a", "b", "a"]  # one batch: all three missing at first
    asked.clear()
    assert read(recent, ["b", "a"], store, asked) == [None, 1]
    assert asked == []


def test_what_is_written_or_forgotten_is_never_stale():
    recent = Recent(4)
    store = {"a": 1}
    asked = []
    read(recent, ["a"], store, asked)
    store["a"] = 2
    recent.keep([("a", 2)])
    assert read(recent, ["a"], store, asked) == [2]
    store["a"] = 3
    recent.forget(["a"])
    assert read(recent, ["a"], store, asked) == [3]
    recent.clear()
    asked.clear()
    assert read(recent, ["a"], store, asked) == [3]
    assert asked == ["a"]


def test_the_keys_asked_every_time_stay_however_many_others_pass():
    recent = Recent(4)
    store = {}
    asked = []
    for i in range(50):
        read(recent, ["nav", f"page{i}"], store, asked)
    assert asked.count("nav") == 1
    assert asked.count("page0") == 1
    # memory is bounded: two generations of at most 4 keys
    assert len(recent._young) <= 4
    assert len(recent._old) <= 4
    asked.clear()
    read(recent, ["page0"], store, asked)
    assert asked == ["page0"]  # long gone, read again


def read_map(recent, keys, store, asked):
    out, missing = recent.lookup_map(keys)
    asked.extend(missing)
    recent.fill_map(out, missing, [store.get(k) for k in missing])
    return out


def test_lookup_map_answers_as_lookup_of_the_distinct_keys_does():
    # the same values, the same keys read, the same memory afterwards, for
    # keys that repeat (a batch of pages' links)
    store = {f"k{i}": i for i in range(12)}
    keys = ["k1", "k2", "k1", "k9", "k3", "k2", "k11", "k0"]
    one, two = Recent(3), Recent(3)
    asked_one: list[str] = []
    asked_two: list[str] = []
    for warm in (["k1", "k5", "k2", "k7"], ["k9"]):
        read(one, warm, store, asked_one)
        read(two, warm, store, asked_two)
    distinct = list(dict.fromkeys(keys))
    values = read(one, distinct, store, asked_one)
    got = read_map(two, keys, store, asked_two)
    assert list(got) == distinct
    assert list(got.values()) == values
    assert asked_two == asked_one
    assert (two._young, two._old) == (one._young, one._old)
    # a key not in the store is None, and remembered as read
    assert read_map(two, ["gone", "gone"], store, asked_two) == {"gone": None}
    assert asked_two[-1] == "gone"
    assert read_map(two, ["gone"], store, asked_two) == {"gone": None}
    assert asked_two.count("gone") == 1
