"""What a crawl may cost, and the traps it does not fall into: overlong URLs,
repeated path segments, endless query strings, a per-host budget, and the
sum of response bodies held in memory. (What reading one page may cost is
bounded where pages are read: webspider.page.options.)"""
