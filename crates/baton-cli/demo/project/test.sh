#!/bin/sh
# test.sh: checks greet.sh; exits 1 on the first failure.
check() { [ "$(sh greet.sh "$@")" = "$EXPECT" ] || { echo "FAIL: greet.sh $*: got '$(sh greet.sh "$@")', want '$EXPECT'"; exit 1; }; }
EXPECT="hello, ada" check ada
echo "ok: all greetings match"
