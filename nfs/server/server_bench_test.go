package server_test

import "testing"

// BenchmarkServerNull and BenchmarkServerGetattr: the round trip of a
// call the dispatch layer answers without go-nfs, through the client,
// over the soft provider (compare transport's BenchmarkCall/null-inline
// for the transport alone).
func BenchmarkServerNull(b *testing.B) {
	env := startClientEnv(b, nil)
	c, ctx := env.exp.Client, b.Context()
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Null(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkServerGetattr(b *testing.B) {
	env := startClientEnv(b, nil)
	c, ctx := env.exp.Client, b.Context()
	root := env.exp.Root
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Getattr(ctx, root); err != nil {
			b.Fatal(err)
		}
	}
}
