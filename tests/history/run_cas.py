"""run_cas.py - the workload's "cas" operations (run.py's Client): a
compare-and-set on the owner's version, GETWITHETAG then SETIFMATCH with the
etag it read, and how each is recorded in the history.

The checker models values, not versions: a plain write's answer (OK) does not
say which version it made, so a model of versions would have to guess one per
write.  What a version compare-and-set promises is recorded as what it says
about values, which is sound:
  - no etag known for the key: GETWITHETAG, recorded as a GET (its value),
    and its etag kept with the value it came with;
  - SETIFMATCH key value etag XX: applied ([new etag, nil]) means the key
    still held the write the etag was read with, so that write's value:
    recorded as SET value IFEQ <that value> (OK); not applied ([etag, value],
    or nil: no key) is the owner reading the key in the same step: recorded
    as a GET of that value.  Outcome unknown: the SET ... IFEQ, indeterminate.
A refusal is not recorded as "the value differs": an EXPIRE, or an INCR back
to an equal value, makes a new version over an equal value.
"""


def set_args(value, ifeq):
    # "via": which command it was (the checker reads only the SET fields)
    return {"value": value, "nx": False, "xx": False, "get": False, "keepttl": False,
            "px": None, "ifeq": ifeq, "via": "setifmatch"}


def cas_words(etags, key, value):
    """(f, args, words, state) of the next cas op on key; etags: key ->
    (etag, value) the client last read."""
    known = etags.get(key)
    if known is None or known[1] is None:  # (no value to compare with)
        return "get", {}, ["GETWITHETAG", key], ("read", None, value)
    etag, old = known
    return ("set", set_args(value, old), ["SETIFMATCH", key, value, str(etag), "XX"],
            ("cas", old, value))


def cas_record(etags, key, state, reply):
    """(f, args, reply as a GET or a SET would answer) of a cas op's reply;
    raises ValueError on a reply of another shape."""
    kind, old, value = state
    if reply is None:
        etags.pop(key, None)
        return "get", {}, None
    if not (isinstance(reply, list) and len(reply) == 2 and isinstance(reply[0], int)
            and (reply[1] is None or isinstance(reply[1], str))):
        raise ValueError("unexpected reply %r to %s" % (reply, kind))
    if kind == "cas" and reply[1] is None:  # applied
        etags[key] = (reply[0], value)
        return "set", set_args(value, old), "OK"
    etags[key] = (reply[0], reply[1])
    return "get", {}, reply[1]
