from scrapy.utils.defer import deferred_f_from_coro_f

from tests.support.crawl import crawl
from tests.support.server import html


@deferred_f_from_coro_f
async def test_smoke(tmp_path, server):
    server.add("/", html('<a href="/a">a</a>', title="Home"))
    server.add("/a", html('<a href="/">home</a>', title="A"))
    result = await crawl(tmp_path, start_urls=server.url("/"))
    assert sorted(i["url"] for i in result.items) == [server.url("/"), server.url("/a")]
    assert server.requested() == ["/robots.txt", "/", "/a"]
    assert len(result.exported()) == 2
