from __future__ import annotations

from webspider.records import MemoryRecords
from webspider.utils.urlcodes import (
    CODE_LENGTH,
    CodeBook,
    give_codes,
    url_id,
    url_ids,
)


def colliding(count: int) -> list[str]:
    """``count`` URLs whose ids start alike (their codes of 4 collide)."""
    urls = [f"http://s.test/{i}" for i in range(20000)]
    by_code: dict[str, list[str]] = {}
    for url, id_ in zip(urls, url_ids(urls), strict=True):
        by_code.setdefault(id_[:CODE_LENGTH], []).append(url)
    return max(by_code.values(), key=len)[:count]


def test_ids_are_twelve_characters_and_batch_equals_single():
    urls = ["http://s.test/", "", "é\udc80"]
    assert url_ids(urls) == [url_id(u) for u in urls]
    assert all(len(i) == 12 for i in url_ids(urls))


def test_a_code_is_the_shortest_free_prefix_and_stays_the_urls():
    records = MemoryRecords()
    first, second = colliding(2)
    codes = give_codes(records, {first: first, second: second})
    assert len(codes[first]) == 4 and len(codes[second]) == 5
    assert codes[second].startswith(codes[first])
    assert dict(records.items()) == {codes[first]: first, codes[second]: second}
    # asked again, in the other order: the same codes, nothing new written
    assert give_codes(records, {second: second, first: first}) == codes
    assert records.count() == 2
    assert "/" not in "".join(codes.values()) and "+" not in "".join(codes.values())


def test_a_book_finds_only_what_was_given_and_forgets_on_clear():
    records = MemoryRecords()
    book = CodeBook(records)
    short = str.upper
    urls = ["http://s.test/a", "http://s.test/b"]
    assert book.find(urls, short) == {}
    given = book.give(urls[:1], short)
    assert book.find(urls, short) == given
    assert records.get(given[urls[0]]) == "HTTP://S.TEST/A"
    other = CodeBook(records)  # another worker of the state
    assert other.give(urls, short)[urls[0]] == given[urls[0]]
    records.clear()
    book.forget()
    assert book.find(urls, short) == {}
