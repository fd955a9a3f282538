//go:build race

package server_test

// raceEnabled reports a -race build: sync.Pool then drops a quarter of what
// it is given, on purpose, so that pooled memory is not counted on.
const raceEnabled = true
