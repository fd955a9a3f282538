package stats

import (
	"slices"
	"testing"
)

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
		ok   bool
	}{
		{nil, 0, false},
		{[]float64{}, 0, false},
		{[]float64{3}, 3, true},
		{[]float64{2, 1}, 1.5, true},
		{[]float64{1.5, 0.5, 1.2}, 1.2, true},
		{[]float64{2, 1, 4, 3}, 2.5, true},
		{[]float64{5, -1, 5, 0, 7}, 5, true},
	} {
		in := slices.Clone(c.xs)
		got, ok := Median(c.xs)
		if got != c.want || ok != c.ok {
			t.Errorf("Median(%v) = %v, %v; want %v, %v", c.xs, got, ok, c.want, c.ok)
		}
		if !slices.Equal(in, c.xs) {
			t.Errorf("Median changed its input: %v, was %v", c.xs, in)
		}
	}
}
