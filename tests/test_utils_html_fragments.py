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
