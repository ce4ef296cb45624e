"""The dashboard's session table (gateway/auth/sessions.py): ids are random and not the token, an
expired or closed id is refused, and one name logging in without end keeps at most its cap."""

from meshrl.gateway.auth.sessions import Sessions
from meshrl.gateway.auth.tokens import Principal

OLGA = Principal("olga", "operator", "operator-token-0123456789")
VIC = Principal("vic", "viewer", "viewer-token-0123456789ab")


def test_an_open_session_names_its_principal_until_closed():
    table = Sessions()
    session_id = table.open(OLGA)
    assert OLGA.token not in session_id and table.principal(session_id) == OLGA
    assert session_id not in table.table  # the table holds digests, not usable cookies
    table.close(session_id)
    assert table.principal(session_id) is None


def test_unknown_empty_and_expired_ids_are_refused():
    table = Sessions(max_age_s=-1)  # every session is already past its age
    session_id = table.open(OLGA)
    assert table.principal(session_id) is None and table.table == {}  # refused and dropped
    assert Sessions().principal(None) is None and Sessions().principal("made-up") is None


def test_one_name_keeps_at_most_its_cap_and_the_oldest_goes():
    table = Sessions(per_name=3)
    vic = table.open(VIC)
    ids = [table.open(OLGA) for _ in range(5)]
    assert [table.principal(i) for i in ids] == [None, None, OLGA, OLGA, OLGA]
    assert table.principal(vic) == VIC  # another name's session is untouched
