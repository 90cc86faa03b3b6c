#!/bin/sh
# greet.sh NAME: prints a greeting.
name="${1:-world}"
echo "hello, $name"
