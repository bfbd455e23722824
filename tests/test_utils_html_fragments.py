from webspider.utils.html import extract_page


def test_every_fragment_of_a_url_is_kept_for_the_anchor_check():
    page = extract_page(
        b'<a href="/b#one">One</a><a href="/b#two">Two</a><a href="/b">B</a>'
        b'<a href="/b#one">One again</a><a href="/c">C</a>',
        "https://s/",
    )
    b, c = page.links
    assert (b.url, b.fragment, b.text) == ("https://s/b", "one", "One")
    assert b.more_fragments == [("two", "Two")]  # "#one" again is the same anchor
    assert c.more_fragments is None


def test_links_within_the_page_are_kept_apart():
    page = extract_page(
        b'<a href="#top">Top</a><a href=" #sec ">Sec</a><a href="#">nothing</a>'
        b'<a href="/x#y">elsewhere</a>',
        "https://s/page",
    )
    assert page.local_fragments == [("top", "Top"), ("sec", "Sec")]
    assert [link.url for link in page.links] == ["https://s/x"]
