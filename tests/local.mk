# tests: TAP tests run by make check.
