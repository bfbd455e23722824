import pytest

from webspider.politeness.retryafter import retry_after_seconds

NOW = 1445412480.0  # Wed, 21 Oct 2015 07:28:00 GMT


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("120", 120.0),
        (b"0", 0.0),
        (" 5 ", 5.0),
        ("Wed, 21 Oct 2015 07:28:30 GMT", 30.0),
        ("Wednesday, 21-Oct-15 07:28:30 GMT", 30.0),  # RFC 850 form
        ("Wed Oct 21 07:28:30 2015", None),  # asctime: no zone, not trusted
        ("Wed, 21 Oct 2015 07:27:00 GMT", 0.0),  # in the past
        ("-5", None),
        ("1.5", None),
        ("soon", None),
        ("", None),
        (None, None),
    ],
)
def test_retry_after_seconds(value, seconds):
    assert retry_after_seconds(value, NOW) == seconds
